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

/// Node-style description of an OS error: the code, `errno` and message Node's `fs` gives
/// for it on this platform (libuv's names; on Windows libuv's own negative numbers and its
/// translation of Win32 error codes).
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
        return error("EINVAL", errno_of(Code::Einval), &err.to_string());
    }
    let code = match err.raw_os_error() {
        Some(raw) => match from_os(raw) {
            // An error this table does not name is reported as the EIO it is to the caller.
            None => Code::Eio,
            // Node opens with FILE_FLAG_BACKUP_SEMANTICS, so a directory opens and libuv
            // reports EISDIR where std's open is refused with ERROR_ACCESS_DENIED.
            Some(Code::Eacces) if cfg!(windows) && syscall == "open" && path.is_dir() => {
                Code::Eisdir
            }
            Some(code) => code,
        },
        // An error made in Rust (no OS number): its kind says which.
        None => match from_kind(err.kind()) {
            Some(code) => code,
            None => return error("EIO", errno_of(Code::Eio), &err.to_string()),
        },
    };
    let (name, desc) = code.name_and_description();
    error(name, errno_of(code), desc)
}

/// The OS errors Node's `fs` errors name, as libuv names and describes them
/// (`uv_err_name`, `uv_strerror`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Eperm,
    Enoent,
    Eio,
    Ebadf,
    Eacces,
    Ebusy,
    Eexist,
    Exdev,
    Enotdir,
    Eisdir,
    Einval,
    Emfile,
    Efbig,
    Enospc,
    Erofs,
    Enametoolong,
    Enotempty,
    Eloop,
    Edquot,
}

impl Code {
    pub fn name_and_description(self) -> (&'static str, &'static str) {
        match self {
            Code::Eperm => ("EPERM", "operation not permitted"),
            Code::Enoent => ("ENOENT", "no such file or directory"),
            Code::Eio => ("EIO", "i/o error"),
            Code::Ebadf => ("EBADF", "bad file descriptor"),
            Code::Eacces => ("EACCES", "permission denied"),
            Code::Ebusy => ("EBUSY", "resource busy or locked"),
            Code::Eexist => ("EEXIST", "file already exists"),
            Code::Exdev => ("EXDEV", "cross-device link not permitted"),
            Code::Enotdir => ("ENOTDIR", "not a directory"),
            Code::Eisdir => ("EISDIR", "illegal operation on a directory"),
            Code::Einval => ("EINVAL", "invalid argument"),
            Code::Emfile => ("EMFILE", "too many open files"),
            Code::Efbig => ("EFBIG", "file too large"),
            Code::Enospc => ("ENOSPC", "no space left on device"),
            Code::Erofs => ("EROFS", "read-only file system"),
            Code::Enametoolong => ("ENAMETOOLONG", "name too long"),
            Code::Enotempty => ("ENOTEMPTY", "directory not empty"),
            Code::Eloop => ("ELOOP", "too many symbolic links encountered"),
            Code::Edquot => ("EDQUOT", "disk quota exceeded"),
        }
    }
}

/// The code of an OS error (`None` for one the table does not name or one made in Rust).
pub fn os_code(err: &std::io::Error) -> Option<Code> {
    err.raw_os_error().and_then(from_os)
}

/// The code of an error made in Rust (`io::ErrorKind::IsADirectory.into()`), so that code
/// which makes one need not know the platform's numbers.
fn from_kind(kind: std::io::ErrorKind) -> Option<Code> {
    use std::io::ErrorKind as K;
    Some(match kind {
        K::NotFound => Code::Enoent,
        K::PermissionDenied => Code::Eacces,
        K::AlreadyExists => Code::Eexist,
        K::IsADirectory => Code::Eisdir,
        K::NotADirectory => Code::Enotdir,
        K::StorageFull => Code::Enospc,
        K::ReadOnlyFilesystem => Code::Erofs,
        K::FileTooLarge => Code::Efbig,
        K::QuotaExceeded => Code::Edquot,
        K::DirectoryNotEmpty => Code::Enotempty,
        K::CrossesDevices => Code::Exdev,
        K::ResourceBusy => Code::Ebusy,
        K::InvalidFilename => Code::Enametoolong,
        _ => return None,
    })
}

/// The code of a Unix `errno` (the platform's numbers, from rustix: macOS's differ from
/// Linux's above 34).
#[cfg(unix)]
fn from_os(raw: i32) -> Option<Code> {
    use rustix::io::Errno;
    let e = Errno::from_raw_os_error(raw);
    UNIX.iter().find(|(n, _)| *n == e).map(|&(_, c)| c)
}

#[cfg(unix)]
const UNIX: [(rustix::io::Errno, Code); 19] = {
    use rustix::io::Errno;
    [
        (Errno::PERM, Code::Eperm),
        (Errno::NOENT, Code::Enoent),
        (Errno::IO, Code::Eio),
        (Errno::BADF, Code::Ebadf),
        (Errno::ACCESS, Code::Eacces),
        (Errno::BUSY, Code::Ebusy),
        (Errno::EXIST, Code::Eexist),
        (Errno::XDEV, Code::Exdev),
        (Errno::NOTDIR, Code::Enotdir),
        (Errno::ISDIR, Code::Eisdir),
        (Errno::INVAL, Code::Einval),
        (Errno::MFILE, Code::Emfile),
        (Errno::FBIG, Code::Efbig),
        (Errno::NOSPC, Code::Enospc),
        (Errno::ROFS, Code::Erofs),
        (Errno::NAMETOOLONG, Code::Enametoolong),
        (Errno::NOTEMPTY, Code::Enotempty),
        (Errno::LOOP, Code::Eloop),
        (Errno::DQUOT, Code::Edquot),
    ]
};

/// Node's `errno`: the negated OS error number on Unix.
#[cfg(unix)]
pub fn errno_of(code: Code) -> i32 {
    UNIX.iter()
        .find(|(_, c)| *c == code)
        .map_or(-5, |(n, _)| -n.raw_os_error())
}

#[cfg(windows)]
fn from_os(raw: i32) -> Option<Code> {
    win32::code(raw)
}

/// Node's `errno` on Windows: libuv's own numbers.
#[cfg(windows)]
pub fn errno_of(code: Code) -> i32 {
    win32::errno(code)
}

#[cfg(not(any(unix, windows)))]
fn from_os(_raw: i32) -> Option<Code> {
    None
}

#[cfg(not(any(unix, windows)))]
pub fn errno_of(_code: Code) -> i32 {
    -5
}

/// libuv's view of Win32 errors (`uv_translate_sys_error`, the file-system part, and the
/// `UV__E*` numbers of `uv/errno.h` on Windows). Compiled on every platform so that its
/// tests run everywhere.
#[cfg_attr(not(windows), allow(dead_code))]
mod win32 {
    use super::Code;

    pub fn code(raw: i32) -> Option<Code> {
        Some(match raw {
            // ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND, ERROR_INVALID_DRIVE,
            // ERROR_INVALID_NAME, ERROR_MOD_NOT_FOUND, ERROR_BAD_PATHNAME,
            // ERROR_ENVVAR_NOT_FOUND, ERROR_DIRECTORY, ERROR_INVALID_REPARSE_DATA
            2 | 3 | 15 | 123 | 126 | 161 | 203 | 267 | 4392 => Code::Enoent,
            // ERROR_ACCESS_DENIED, ERROR_ELEVATION_REQUIRED, ERROR_NOACCESS,
            // ERROR_CANT_ACCESS_FILE
            5 | 740 | 998 | 1920 => Code::Eacces,
            // ERROR_PRIVILEGE_NOT_HELD
            1314 => Code::Eperm,
            // ERROR_INVALID_HANDLE, ERROR_INVALID_FLAGS
            6 | 1004 => Code::Ebadf,
            // ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION
            32 | 33 => Code::Ebusy,
            // ERROR_FILE_EXISTS, ERROR_ALREADY_EXISTS
            80 | 183 => Code::Eexist,
            // ERROR_NOT_SAME_DEVICE
            17 => Code::Exdev,
            // ERROR_INVALID_FUNCTION (a read of a directory handle)
            1 => Code::Eisdir,
            // ERROR_INVALID_DATA, ERROR_INVALID_PARAMETER, ERROR_INSUFFICIENT_BUFFER
            13 | 87 | 122 => Code::Einval,
            // ERROR_TOO_MANY_OPEN_FILES
            4 => Code::Emfile,
            // ERROR_HANDLE_DISK_FULL, ERROR_CANNOT_MAKE, ERROR_DISK_FULL,
            // ERROR_EA_TABLE_FULL, ERROR_END_OF_MEDIA
            39 | 82 | 112 | 277 | 1100 => Code::Enospc,
            // ERROR_WRITE_PROTECT
            19 => Code::Erofs,
            // ERROR_FILENAME_EXCED_RANGE
            206 => Code::Enametoolong,
            // ERROR_DIR_NOT_EMPTY
            145 => Code::Enotempty,
            // ERROR_CANT_RESOLVE_FILENAME
            1921 => Code::Eloop,
            // ERROR_CRC, ERROR_GEN_FAILURE, ERROR_OPEN_FAILED, ERROR_IO_DEVICE
            23 | 31 | 110 | 1117 => Code::Eio,
            _ => return None,
        })
    }

    pub fn errno(code: Code) -> i32 {
        match code {
            Code::Eperm => -4048,
            Code::Enoent => -4058,
            Code::Eio => -4070,
            Code::Ebadf => -4083,
            Code::Eacces => -4092,
            Code::Ebusy => -4082,
            Code::Eexist => -4075,
            Code::Exdev => -4037,
            Code::Enotdir => -4052,
            Code::Eisdir => -4068,
            Code::Einval => -4071,
            Code::Emfile => -4066,
            Code::Efbig => -4036,
            Code::Enospc => -4055,
            Code::Erofs => -4043,
            Code::Enametoolong => -4064,
            Code::Enotempty => -4051,
            Code::Eloop => -4067,
            // libuv has no EDQUOT on Windows; Windows has no quota error it translates.
            Code::Edquot => -4094,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn fields_and_message() {
        let e = fs_error(&ErrorKind::NotFound.into(), "open", Path::new("/a, b 'c'"));
        assert_eq!(
            e.message,
            "ENOENT: no such file or directory, open '/a, b 'c''"
        );
        let os = e.os.clone().expect("os fields");
        assert_eq!(
            (os.errno, os.syscall.as_str()),
            (errno_of(Code::Enoent), "open")
        );
        assert_eq!(os.path.as_deref(), Some("/a, b 'c'"));
        let e = e.without_path();
        assert_eq!(e.message, "ENOENT: no such file or directory, open");
        assert_eq!(e.os.and_then(|o| o.path), None);
        // An OS error the table does not name (EPROTO on Linux, ERROR_REQ_NOT_ACCEP on
        // Windows) is an EIO.
        let e = fs_error(&Error::from_raw_os_error(71), "read", Path::new("/x"));
        assert_eq!(
            (e.code.as_str(), e.os.map(|o| o.errno)),
            ("EIO", Some(errno_of(Code::Eio)))
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_numbers() {
        let e = fs_error(&Error::from_raw_os_error(2), "open", Path::new("/x"));
        assert_eq!(
            (e.code.as_str(), e.os.map(|o| o.errno)),
            ("ENOENT", Some(-2))
        );
        assert_eq!(errno_of(Code::Eisdir), -21);
        assert_eq!(errno_of(Code::Eloop), -40);
    }

    /// libuv's translation, checked on every platform (the Windows build uses it).
    #[test]
    fn win32_translation_is_libuvs() {
        let named = |raw| win32::code(raw).map(|c| (c.name_and_description().0, win32::errno(c)));
        assert_eq!(named(2), Some(("ENOENT", -4058)));
        assert_eq!(named(3), Some(("ENOENT", -4058)));
        assert_eq!(named(5), Some(("EACCES", -4092)));
        assert_eq!(named(32), Some(("EBUSY", -4082)));
        assert_eq!(named(80), Some(("EEXIST", -4075)));
        assert_eq!(named(145), Some(("ENOTEMPTY", -4051)));
        assert_eq!(named(112), Some(("ENOSPC", -4055)));
        assert_eq!(named(1), Some(("EISDIR", -4068)));
        assert_eq!(named(71), None);
    }

    /// Errors the OS itself gives carry Node's codes on this platform (on Windows: Win32
    /// codes translated as libuv does; before, they were read as Unix numbers and became
    /// EIO).
    #[test]
    fn real_os_errors_carry_nodes_codes() {
        let dir = std::env::temp_dir().join(format!("pi-err-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let missing = dir.join("no").join("such.jsonl");
        let e = std::fs::File::open(&missing).expect_err("missing");
        let e = fs_error(&e, "open", &missing);
        assert_eq!(
            (e.code.as_str(), e.os.map(|o| o.errno)),
            ("ENOENT", Some(errno_of(Code::Enoent)))
        );
        let file = dir.join("f");
        std::fs::write(&file, "x").expect("write");
        let e = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
            .expect_err("exists");
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
        assert_eq!(fs_error(&e, "open", &file).code, "EEXIST");
        let e = std::fs::write(&dir, "x").expect_err("a directory");
        let e = fs_error(&e, "open", &dir);
        assert_eq!(
            e.message,
            format!(
                "EISDIR: illegal operation on a directory, open '{}'",
                dir.display()
            )
        );
        assert_eq!(e.os.map(|o| o.errno), Some(errno_of(Code::Eisdir)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
