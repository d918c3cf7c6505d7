// Stand-ins for the session exports the module hook puts into pi's bundle, so that the addon and
// this package's JS load when pi first uses its session code, not when the bundle loads: a pi run
// that never opens a session (`pi --version`, `pi --help`, `pi config`, ...) pays nothing for them.
//
// `resolve()` gives the module to forward to, once: this package's (index.js), or, when the addon
// does not load after all, pi's own originals (the fail-safe; the caller says so on stderr).
//   - the free functions: functions of the same name that call the resolved one;
//   - SessionManager: a Proxy over a constructor that forwards every operation to the resolved
//     class (statics, `new`, `instanceof`, `extends`, reflection). pi itself only calls statics
//     (create, open, inMemory, ...); SDK users may do the rest.
//   - CURRENT_SESSION_VERSION: the number itself (checked equal to ours before serving).

/**
 * @param {() => Record<string, any>} resolve
 * @param {readonly string[]} names
 * @param {number} sessionVersion
 */
export function standIns(resolve, names, sessionVersion) {
  let resolved;
  const target = () => {
    resolved ??= resolve();
    return resolved;
  };
  /** @type {Record<string, any>} */
  const out = {};
  for (const name of names) {
    if (name === "CURRENT_SESSION_VERSION") out[name] = sessionVersion;
    else if (name === "SessionManager") out[name] = classStandIn(() => target().SessionManager);
    else out[name] = functionStandIn(name, () => target()[name]);
  }
  return out;
}

function functionStandIn(name, real) {
  const holder = {
    [name](...args) {
      return Reflect.apply(real(), this, args);
    },
  };
  return holder[name];
}

/** A constructor that is, to every observer, the class `real()` returns once first touched. */
function classStandIn(real) {
  // a bound function: a constructor with no own `prototype` (the Proxy's invariants then let
  // `prototype` be the real class's, mirrored onto the target when first touched)
  const shell = function SessionManager() {}.bind(undefined);
  let cls;
  const resolved = () => {
    if (cls) return cls;
    cls = real();
    mirrorFixed(cls, shell);
    return cls;
  };
  let proxy;
  const self = (receiver) => (receiver === proxy ? resolved() : receiver);
  proxy = new Proxy(shell, {
    get: (_t, key, receiver) => Reflect.get(resolved(), key, self(receiver)),
    set: (_t, key, value, receiver) => Reflect.set(resolved(), key, value, self(receiver)),
    has: (_t, key) => Reflect.has(resolved(), key),
    ownKeys: () => Reflect.ownKeys(resolved()),
    getOwnPropertyDescriptor: (_t, key) => Reflect.getOwnPropertyDescriptor(resolved(), key),
    defineProperty: (_t, key, desc) => {
      const ok = Reflect.defineProperty(resolved(), key, desc);
      if (ok) mirrorFixed(resolved(), shell);
      return ok;
    },
    deleteProperty: (_t, key) => Reflect.deleteProperty(resolved(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(resolved()),
    setPrototypeOf: (_t, proto) => Reflect.setPrototypeOf(resolved(), proto),
    apply: (_t, thisArg, args) => Reflect.apply(resolved(), thisArg, args),
    construct: (_t, args, newTarget) =>
      Reflect.construct(resolved(), args, newTarget === proxy ? resolved() : newTarget),
  });
  return proxy;
}

/** Copies `from`'s non-configurable own properties onto `to` (what a Proxy over `to` may report). */
function mirrorFixed(from, to) {
  for (const key of Reflect.ownKeys(from)) {
    const desc = Reflect.getOwnPropertyDescriptor(from, key);
    if (desc && !desc.configurable && !Object.hasOwn(to, key)) Reflect.defineProperty(to, key, desc);
  }
}
