//! Crash-safe file writes: whole files replaced atomically (temp file, fsync, rename, fsync of
//! the folder), new files created under a name that is never reused, and lines appended, either
//! flushed to disk at once or left to the system when a journal can redo them.
//!
//! A crash at any moment leaves either the old file or the new one, never a mixture; an
//! appended line is either absent or complete after a restart (and a line a crash cut short is
//! never glued to the next one).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many candidate names `write_new_atomically` tries before giving up.
pub const MAX_NAME_ATTEMPTS: usize = 10_000;

/// What went wrong while writing a file; each variant names the path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum AtomicFileError {
    #[error("{path}: the path has no file name")]
    NoFileName { path: PathBuf },
    #[error("cannot create temporary file {path}: {source}")]
    CreateTemp {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot flush {path} to disk: {source}")]
    Sync {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot move {from} to {to}: {source}")]
    Rename {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: a line to append must not contain a line break")]
    LineBreakInLine { path: PathBuf },
    #[error("{dir}: no free file name after {attempts} attempts")]
    NoFreeName { dir: PathBuf, attempts: usize },
}

/// Replaces (or creates) `path` with `bytes` so that a crash leaves the old content or the new,
/// never part of either: the bytes go to a temporary file in the same folder, which is flushed
/// to disk, renamed over `path`, and then the folder itself is flushed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), AtomicFileError> {
    let temp = write_temp_beside(path, bytes)?;
    if let Err(source) = fs::rename(&temp, path) {
        let _ = fs::remove_file(&temp);
        return Err(AtomicFileError::Rename {
            from: temp,
            to: path.to_path_buf(),
            source,
        });
    }
    sync_dir(parent_dir(path))
}

/// Creates a new file in `dir` holding `bytes`, under the first of `names` that does not exist
/// yet, atomically (a reader never sees a partial file) and without ever replacing an existing
/// file, even when another process races for the same name. Returns the path written.
///
/// The file is written to a temporary name first and then hard-linked to its final name (which
/// fails if that name exists); on file systems without hard links it falls back to checking
/// for the name and renaming, which is not race-free but never loses the content.
pub fn write_new_atomically(
    dir: &Path,
    names: impl IntoIterator<Item = String>,
    bytes: &[u8],
) -> Result<PathBuf, AtomicFileError> {
    let mut names = names.into_iter().take(MAX_NAME_ATTEMPTS).peekable();
    let Some(first) = names.peek() else {
        return Err(AtomicFileError::NoFreeName {
            dir: dir.to_path_buf(),
            attempts: 0,
        });
    };
    let temp = write_temp_beside(&dir.join(first), bytes)?;
    let mut attempts = 0;
    for name in names {
        attempts += 1;
        let target = dir.join(&name);
        match fs::hard_link(&temp, &target) {
            Ok(()) => {
                let _ = fs::remove_file(&temp);
                sync_dir(dir)?;
                return Ok(target);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) => {
                // No hard links here (or another link problem): check-then-rename.
                if target.exists() {
                    continue;
                }
                return match fs::rename(&temp, &target) {
                    Ok(()) => {
                        sync_dir(dir)?;
                        Ok(target)
                    }
                    Err(source) => {
                        let _ = fs::remove_file(&temp);
                        Err(AtomicFileError::Rename {
                            from: temp,
                            to: target,
                            source,
                        })
                    }
                };
            }
        }
    }
    let _ = fs::remove_file(&temp);
    Err(AtomicFileError::NoFreeName {
        dir: dir.to_path_buf(),
        attempts,
    })
}

/// When an appended line or a created file reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// Before the call returns (fsync).
    Now,
    /// When the system writes its cache back: for files a journal can redo after a power cut
    /// (the server's game output), so that each finished game costs no fsync of its own.
    Later,
}

/// Appends `line` and a `\n` to `path` (created if missing) in one write; with `Flush::Now`
/// the file (and, when this created it, its folder) is on disk before this returns. If the file does not end with a line break (a crash cut its last
/// line short), a `\n` is written first so the new line stands on its own.
/// `line` must not contain `\n` or `\r`.
pub fn append_line(path: &Path, line: &str, flush: Flush) -> Result<(), AtomicFileError> {
    if line.contains(['\n', '\r']) {
        return Err(AtomicFileError::LineBreakInLine {
            path: path.to_path_buf(),
        });
    }
    let open_error = |source| AtomicFileError::Open {
        path: path.to_path_buf(),
        source,
    };
    let (mut file, existed) = open_for_append(path)?;
    let mut buf = Vec::with_capacity(line.len() + 2);
    if !ends_with_line_break_or_is_empty(&mut file).map_err(open_error)? {
        buf.push(b'\n');
    }
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    let write_error = |source| AtomicFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let before = file.metadata().map_err(open_error)?.len();
    if let Err(e) = file.write_all(&buf) {
        // Part of the line may be in (a full disk): cut it off, so that the file holds whole
        // lines only and the same line can be appended again.
        let _ = file.set_len(before);
        return Err(write_error(e));
    }
    if flush == Flush::Later {
        return Ok(());
    }
    file.sync_data().map_err(|source| AtomicFileError::Sync {
        path: path.to_path_buf(),
        source,
    })?;
    if !existed {
        sync_dir(parent_dir(path))?;
    }
    Ok(())
}

/// Creates `path`, which must not exist, holding `bytes`, without flushing it to disk
/// (`Flush::Later`): for a file whose content a journal holds, checked and rewritten after a
/// crash. Fails with `AlreadyExists` in `source` when the name is taken.
pub fn create_new_file(path: &Path, bytes: &[u8]) -> Result<(), AtomicFileError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|source| AtomicFileError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    file.write_all(bytes).map_err(|source| {
        // A full disk can leave part of it: the name stays free for the next try.
        let _ = fs::remove_file(path);
        AtomicFileError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Flushes every file of the file system holding `dir` to disk (Linux `syncfs`); elsewhere,
/// the folder's own entries only.
pub fn sync_file_system(dir: &Path) -> Result<(), AtomicFileError> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let sync_error = |source| AtomicFileError::Sync {
            path: dir.to_path_buf(),
            source,
        };
        let folder = File::open(dir).map_err(sync_error)?;
        // SAFETY: `syncfs` takes an open descriptor, which `folder` owns for the call.
        if unsafe { libc::syncfs(folder.as_raw_fd()) } != 0 {
            return Err(sync_error(io::Error::last_os_error()));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    sync_dir(dir)
}

/// Opens `path` to append to it (and read it), creating it if missing; returns the file and
/// whether it existed before. A file this creates is durable only after [`sync_created`].
pub fn open_for_append(path: &Path) -> Result<(File, bool), AtomicFileError> {
    let existed = path.exists();
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|source| AtomicFileError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    Ok((file, existed))
}

/// Makes a newly created file durable: its content and metadata, then its folder entry.
pub fn sync_created(file: &File, path: &Path) -> Result<(), AtomicFileError> {
    file.sync_all().map_err(|source| AtomicFileError::Sync {
        path: path.to_path_buf(),
        source,
    })?;
    sync_dir(parent_dir(path))
}

fn ends_with_line_break_or_is_empty(file: &mut File) -> io::Result<bool> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// The folder holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to a fresh temporary file next to `path` and flushes it to disk.
fn write_temp_beside(path: &Path, bytes: &[u8]) -> Result<PathBuf, AtomicFileError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let Some(name) = path.file_name() else {
        return Err(AtomicFileError::NoFileName {
            path: path.to_path_buf(),
        });
    };
    let dir = parent_dir(path);
    let mut attempt = 0u32;
    let (temp, mut file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}.{n}.tmp", std::process::id()));
        let temp = dir.join(temp_name);
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => break (temp, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(source) => return Err(AtomicFileError::CreateTemp { path: temp, source }),
        }
    };
    let result = file
        .write_all(bytes)
        .map_err(|source| AtomicFileError::Write {
            path: temp.clone(),
            source,
        })
        .and_then(|()| {
            file.sync_all().map_err(|source| AtomicFileError::Sync {
                path: temp.clone(),
                source,
            })
        });
    match result {
        Ok(()) => Ok(temp),
        Err(e) => {
            drop(file);
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Flushes a folder's entries (a rename or a new name) to disk. Only Unix can open a folder for
/// this; elsewhere it does nothing.
fn sync_dir(dir: &Path) -> Result<(), AtomicFileError> {
    #[cfg(unix)]
    {
        let sync_error = |source| AtomicFileError::Sync {
            path: dir.to_path_buf(),
            source,
        };
        File::open(dir)
            .map_err(sync_error)?
            .sync_all()
            .map_err(sync_error)?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftover_temp_files(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn write_atomically_creates_then_replaces_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("standings.json");
        write_atomically(&path, b"old").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"old");
        write_atomically(&path, b"new content").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new content");
        assert!(leftover_temp_files(dir.path()).is_empty());
    }

    #[test]
    fn write_atomically_into_a_missing_folder_fails_with_the_temp_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("x.json");
        let err = write_atomically(&path, b"x").unwrap_err();
        assert!(matches!(err, AtomicFileError::CreateTemp { .. }), "{err}");
        assert!(!path.exists());
    }

    #[test]
    fn write_new_atomically_never_replaces_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let names = || (1..).map(|n| format!("game ({n}).txt"));
        let a = write_new_atomically(dir.path(), names(), b"first").unwrap();
        let b = write_new_atomically(dir.path(), names(), b"second").unwrap();
        assert_eq!(a.file_name().unwrap(), "game (1).txt");
        assert_eq!(b.file_name().unwrap(), "game (2).txt");
        assert_eq!(fs::read(&a).unwrap(), b"first");
        assert_eq!(fs::read(&b).unwrap(), b"second");
        assert!(leftover_temp_files(dir.path()).is_empty());
    }

    #[test]
    fn racing_writers_of_one_name_all_get_their_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let writers: Vec<_> = (0..8)
            .map(|k| {
                let dir = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    let names = (1..).map(|n| format!("same ({n}).txt"));
                    write_new_atomically(&dir, names, format!("writer {k}").as_bytes()).unwrap()
                })
            })
            .collect();
        let mut paths: Vec<PathBuf> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), 8);
        let mut contents: Vec<String> = paths
            .iter()
            .map(|p| fs::read_to_string(p).unwrap())
            .collect();
        contents.sort();
        let expected: Vec<String> = (0..8).map(|k| format!("writer {k}")).collect();
        assert_eq!(contents, expected);
        assert!(leftover_temp_files(dir.path()).is_empty());
    }

    #[test]
    fn write_new_atomically_gives_up_when_every_name_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), b"taken").unwrap();
        let err = write_new_atomically(dir.path(), ["a.txt".to_string()], b"x").unwrap_err();
        assert!(
            matches!(err, AtomicFileError::NoFreeName { attempts: 1, .. }),
            "{err}"
        );
        assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"taken");
        assert!(leftover_temp_files(dir.path()).is_empty());
        let err = write_new_atomically(dir.path(), Vec::new(), b"x").unwrap_err();
        assert!(matches!(
            err,
            AtomicFileError::NoFreeName { attempts: 0, .. }
        ));
    }

    #[test]
    fn append_line_appends_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("games.jsonl");
        append_line(&path, r#"{"game":1}"#, Flush::Now).unwrap();
        append_line(&path, r#"{"game":2}"#, Flush::Later).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "{\"game\":1}\n{\"game\":2}\n"
        );
    }

    #[test]
    fn create_new_file_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.txt");
        create_new_file(&path, b"first").unwrap();
        let err = create_new_file(&path, b"second").unwrap_err();
        assert!(
            matches!(&err, AtomicFileError::Open { source, .. } if source.kind() == io::ErrorKind::AlreadyExists),
            "{err}"
        );
        assert_eq!(fs::read(&path).unwrap(), b"first");
        sync_file_system(dir.path()).unwrap();
    }

    #[test]
    fn append_line_does_not_glue_onto_a_cut_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("games.jsonl");
        fs::write(&path, "{\"game\":1}\n{\"ga").unwrap();
        append_line(&path, "{\"game\":2}", Flush::Now).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "{\"game\":1}\n{\"ga\n{\"game\":2}\n"
        );
    }

    #[test]
    fn append_line_refuses_line_breaks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("games.jsonl");
        for bad in ["a\nb", "a\r", "\n"] {
            let err = append_line(&path, bad, Flush::Now).unwrap_err();
            assert!(matches!(err, AtomicFileError::LineBreakInLine { .. }));
        }
        assert!(!path.exists());
    }
}
