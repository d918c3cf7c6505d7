//! I/O errors described the way Node's `fs` describes them. Its own module so that `store`
//! and `durability` (which both report them) do not import each other.

use std::path::Path;

/// An I/O failure described the way Node's `fs` describes it
/// (`EACCES: permission denied, open '/x'`), so callers see the reference's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsError {
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}

/// Node-style description of an OS error.
pub fn fs_error(err: &std::io::Error, syscall: &str, path: &Path) -> FsError {
    let (code, desc) = match err.raw_os_error() {
        Some(1) => ("EPERM", "operation not permitted"),
        Some(2) => ("ENOENT", "no such file or directory"),
        Some(5) => ("EIO", "i/o error"),
        Some(9) => ("EBADF", "bad file descriptor"),
        Some(13) => ("EACCES", "permission denied"),
        Some(17) => ("EEXIST", "file already exists"),
        Some(20) => ("ENOTDIR", "not a directory"),
        Some(21) => ("EISDIR", "illegal operation on a directory"),
        Some(24) => ("EMFILE", "too many open files"),
        Some(27) => ("EFBIG", "file too large"),
        Some(28) => ("ENOSPC", "no space left on device"),
        Some(30) => ("EROFS", "read-only file system"),
        Some(122) => ("EDQUOT", "disk quota exceeded"),
        _ => ("EIO", "i/o error"),
    };
    if crate::safefs::is_not_regular(err) {
        return FsError {
            code: "EINVAL".to_string(),
            message: format!("EINVAL: {err}, {syscall} '{}'", path.display()),
        };
    }
    let desc = if err.raw_os_error().is_none() {
        err.to_string()
    } else {
        desc.to_string()
    };
    FsError {
        code: code.to_string(),
        message: format!("{code}: {desc}, {syscall} '{}'", path.display()),
    }
}
