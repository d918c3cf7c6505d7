//! Opening files that an attacker (or an unlucky user) may have replaced with something
//! else: a FIFO (whose `open` blocks until a writer comes), a device (`/dev/zero` never
//! ends), a socket, or a symbolic link where none is expected. Built on `rustix` (safe
//! wrappers over the system calls; no `unsafe` here).
//!
//! - [`open_regular`]: `O_RDONLY | O_NONBLOCK | O_CLOEXEC` (optionally `O_NOFOLLOW`), then
//!   `fstat` on the opened descriptor: anything but a regular file is refused with
//!   [`not_regular`]. `O_NONBLOCK` makes the open of a FIFO return at once; on a regular
//!   file it changes nothing.
//!   On Windows the open has `FILE_FLAG_BACKUP_SEMANTICS` (as libuv's): a directory opens
//!   and is refused as not regular, as on Unix.
//! - [`create_exclusive`]: `O_CREAT | O_EXCL | O_NOFOLLOW`, mode given (e.g. `0600`): never
//!   follows a link, never opens (or truncates) a file that already exists.

use std::fs::File;
use std::io;
use std::path::Path;

/// What [`open_regular`] found: the file and the size it had when opened (reads stop there).
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub size: u64,
    /// Owner uid (0 on platforms without one).
    pub uid: u32,
    /// The opened descriptor's metadata (same as `file.metadata()` at open).
    pub meta: std::fs::Metadata,
}

/// The error for a path that is not a regular file: `ErrorKind::InvalidInput`,
/// "not a regular file (fifo)".
pub fn not_regular(kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({kind})"),
    )
}

/// Whether an error is [`not_regular`]'s.
pub fn is_not_regular(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidInput && e.to_string().starts_with("not a regular file")
}

/// Name of a non-regular file type, for messages.
pub fn kind_name(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "fifo";
        }
        if ft.is_char_device() {
            return "character device";
        }
        if ft.is_block_device() {
            return "block device";
        }
        if ft.is_socket() {
            return "socket";
        }
    }
    if ft.is_dir() {
        "directory"
    } else if ft.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

/// Open `path` for reading without blocking and accept only a regular file (checked on the
/// opened descriptor, so a swap between a `stat` and the `open` is seen). `follow`: whether
/// a symbolic link at `path` itself is followed (`false` adds `O_NOFOLLOW`: a link fails
/// with `ELOOP`).
pub fn open_regular(path: &Path, follow: bool) -> io::Result<Opened> {
    #[cfg(unix)]
    let file = {
        use rustix::fs::{Mode, OFlags};
        let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        if !follow {
            flags |= OFlags::NOFOLLOW;
        }
        File::from(rustix::fs::open(path, flags, Mode::empty())?)
    };
    #[cfg(windows)]
    let file = {
        use std::os::windows::fs::OpenOptionsExt;
        // FILE_FLAG_BACKUP_SEMANTICS, as libuv opens every file: a directory opens (std's
        // plain open is refused with ERROR_ACCESS_DENIED) and is refused below as one, so
        // callers tell it apart from a permission error as they do on Unix.
        const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
        let _ = follow;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
            .open(path)?
    };
    #[cfg(not(any(unix, windows)))]
    let file = {
        let _ = follow;
        File::open(path)?
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular(kind_name(meta.file_type())));
    }
    #[cfg(unix)]
    let uid = {
        use std::os::unix::fs::MetadataExt;
        meta.uid()
    };
    #[cfg(not(unix))]
    let uid = 0;
    Ok(Opened {
        size: meta.len(),
        file,
        uid,
        meta,
    })
}

/// Create `path` read-write with `O_CREAT | O_EXCL | O_NOFOLLOW` and `mode` (before the
/// umask): fails with `EEXIST` when anything, a dangling link included, is there.
pub fn create_exclusive(path: &Path, mode: u32) -> io::Result<File> {
    #[cfg(unix)]
    {
        use rustix::fs::{Mode, OFlags};
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::open(
            path,
            flags,
            Mode::from_raw_mode(mode as rustix::fs::RawMode),
        )?))
    }
    #[cfg(not(unix))]
    {
        let _ = mode;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
    }
}

/// Open an existing `path` read-write without following a link at it and without blocking;
/// only a regular file is accepted.
pub fn open_existing_rw_nofollow(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    let file = {
        use rustix::fs::{Mode, OFlags};
        let flags =
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        File::from(rustix::fs::open(path, flags, Mode::empty())?)
    };
    #[cfg(not(unix))]
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular(kind_name(meta.file_type())));
    }
    Ok(file)
}

/// The effective uid of this process (0 on platforms without one).
pub fn euid() -> u32 {
    #[cfg(unix)]
    {
        rustix::process::geteuid().as_raw()
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// Whether this process may read `path` (`access(R_OK)`, following links; on other
/// platforms: whether it opens).
pub fn readable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        rustix::fs::access(path, rustix::fs::Access::READ_OK).is_ok()
    }
    #[cfg(not(unix))]
    {
        File::open(path).is_ok()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[cfg(not(target_vendor = "apple"))]
    fn make_fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
    }

    // rustix has neither `mknodat` nor `mkfifoat` for macOS (no `*at` form before macOS 13).
    #[cfg(target_vendor = "apple")]
    fn make_fifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg("-m")
            .arg("600")
            .arg(path)
            .status()
            .expect("mkfifo");
        assert!(status.success(), "mkfifo: {status}");
    }

    #[test]
    fn fifo_and_device_are_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!("pi-safefs-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let fifo = dir.join("f.jsonl");
        let _ = std::fs::remove_file(&fifo);
        make_fifo(&fifo);
        let e = open_regular(&fifo, true).expect_err("fifo");
        assert!(is_not_regular(&e), "{e}");
        let e = open_regular(Path::new("/dev/zero"), true).expect_err("device");
        assert!(is_not_regular(&e), "{e}");
        let link = dir.join("l");
        let _ = std::fs::remove_file(&link);
        let target = dir.join("t");
        std::fs::write(&target, "x").expect("write");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(open_regular(&link, true).is_ok());
        assert!(open_regular(&link, false).is_err());
        assert!(create_exclusive(&link, 0o600).is_err());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "x");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
