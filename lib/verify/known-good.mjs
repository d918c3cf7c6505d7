// Digests (lib/verify/identity.mjs) of the session code of the pi releases this package serves
// without verifying on the user's machine: each one passed the verification corpus
// (lib/verify/corpus.mjs) against that release installed from npm (`npm run test:pi-releases`
// runs it again for every release). After verifying a new release, add its lines, printed by
// `node scripts/pi-digests.mjs <its package folder>`.
export const KNOWN_GOOD = Object.freeze({
  "bundle:0426becd43ff630d8c9129f5606b23d0a43d5c115334884c77aa6595035c8690": "1.3.0",
  "bundle:aa4c8b091657bda611f6fd58343561fa44cda1070ae4cd5dbd09ffe1d9a34aab": "1.4.0",
  "bundle:e52d27d064df05fe8ec15f05db07d7c895051597551a0d62b2fe77208d88e942": "1.5.0",
  "bundle:effbbd5d6247983dc11c7ae5796eb24bda88f9ebf78c707d3f92ca73cbb8b51e": "1.5.2",
  "bundle:5558c943edf1c00ca788788bc6b041d6a70a50ae7e646be2192ad399f1df7e34": "1.6.0",
  // the unbundled module did not change between 1.3.0 and 1.4.0, nor between 1.5.0 and 1.5.2
  "module:acceeb45e3e4a2972ec41a860a84ccd4fdd19ab2db58e9241b2d1c85eea59a35": "1.3.0, 1.4.0",
  "module:e68d3cc03bb2dbc42374cb39de98eb5c21d996c64b8f7df81139d472230e5673": "1.5.0, 1.5.2",
  "module:0a17e71b9635aa28bbecd7570ad9c1e33d381932d10f5a9c5803f63fb95a6da9": "1.6.0",
});
