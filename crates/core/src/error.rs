//! I/O errors described the way Node's `fs` describes them. Its own module so that `store`
//! and `durability` (which both report them) do not import each other.

use std::path::Path;

/// An I/O failure described the way Node's `fs` describes it
/// (`EACCES: permission denied, open '/x'`), so callers see the reference's messages. The
/// fields Node's error object carries are kept apart (`errno`, `syscall`, `path`): the
/// binding hands them to JS as properties, so nothing parses the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsError {
    pub code: String,
    pub message: String,
    /// Node's fields; `None` for an error Node has no syscall shape for (a held lock).
    pub os: Option<OsFields>,
}

/// The properties of a Node `fs` error besides `message` and `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsFields {
    /// Node's `errno`: the negated OS error number (`-2` for `ENOENT` on Linux).
    pub errno: i32,
    pub syscall: String,
    /// `None` where Node's error has no path (`readSync` on a descriptor).
    pub path: Option<String>,
}

impl FsError {
    /// The same error without its path, in message and fields, as Node's `readSync` reports
    /// it (`EISDIR: illegal operation on a directory, read`).
    pub fn without_path(mut self) -> FsError {
        if let Some(path) = self.os.as_mut().and_then(|os| os.path.take())
            && let Some(m) = self.message.strip_suffix(&format!(" '{path}'"))
        {
            self.message = m.to_string();
        }
        self
    }
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}

/// Node-style description of an OS error.
pub fn fs_error(err: &std::io::Error, syscall: &str, path: &Path) -> FsError {
    let shown = path.display().to_string();
    let error = |code: &str, errno: i32, desc: &str| FsError {
        code: code.to_string(),
        message: format!("{code}: {desc}, {syscall} '{shown}'"),
        os: Some(OsFields {
            errno,
            syscall: syscall.to_string(),
            path: Some(shown.clone()),
        }),
    };
    if crate::safefs::is_not_regular(err) {
        return error("EINVAL", -22, &err.to_string());
    }
    let Some(raw) = err.raw_os_error() else {
        return error("EIO", -5, &err.to_string());
    };
    // Node's errno is the negated OS number; an error this table does not name is reported
    // as the EIO it is to the caller.
    let (code, desc) = match raw {
        1 => ("EPERM", "operation not permitted"),
        2 => ("ENOENT", "no such file or directory"),
        5 => ("EIO", "i/o error"),
        9 => ("EBADF", "bad file descriptor"),
        13 => ("EACCES", "permission denied"),
        17 => ("EEXIST", "file already exists"),
        20 => ("ENOTDIR", "not a directory"),
        21 => ("EISDIR", "illegal operation on a directory"),
        24 => ("EMFILE", "too many open files"),
        27 => ("EFBIG", "file too large"),
        28 => ("ENOSPC", "no space left on device"),
        30 => ("EROFS", "read-only file system"),
        122 => ("EDQUOT", "disk quota exceeded"),
        _ => return error("EIO", -5, "i/o error"),
    };
    error(code, -raw, desc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_message() {
        let e = fs_error(
            &std::io::Error::from_raw_os_error(2),
            "open",
            Path::new("/a, b 'c'"),
        );
        assert_eq!(
            e.message,
            "ENOENT: no such file or directory, open '/a, b 'c''"
        );
        let os = e.os.clone().expect("os fields");
        assert_eq!((os.errno, os.syscall.as_str()), (-2, "open"));
        assert_eq!(os.path.as_deref(), Some("/a, b 'c'"));
        let e = e.without_path();
        assert_eq!(e.message, "ENOENT: no such file or directory, open");
        assert_eq!(e.os.and_then(|o| o.path), None);
        let e = fs_error(
            &std::io::Error::from_raw_os_error(40),
            "read",
            Path::new("/x"),
        );
        assert_eq!((e.code.as_str(), e.os.map(|o| o.errno)), ("EIO", Some(-5)));
    }
}
