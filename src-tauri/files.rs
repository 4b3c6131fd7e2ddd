//! "Save to a file" on the Job screen: one of a job's values, whole, written as pretty JSON to a
//! new file in the person's Downloads folder. The app has no file dialog, so the folder is
//! fixed and the reply says where the file went; an existing file is never written over.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};

use onejob_engine::{Error, JobPart};
use serde::Serialize;
use serde_json::Value;

/// How many numbered names (`… (2).json`, `… (3).json`) are tried before giving up.
const MAX_TRIES: u32 = 1000;

/// Where a value was saved.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct SavedFile {
    /// The new file's full path.
    pub path: String,
    /// Its length in bytes.
    pub size: u32,
}

/// The folder values are saved in: the desktop's Downloads folder, or the home folder when
/// the desktop names none.
pub fn folder() -> Result<PathBuf, Error> {
    dirs::download_dir()
        .or_else(dirs::home_dir)
        .ok_or_else(|| Error::internal("there is neither a Downloads nor a home folder to save to"))
}

/// Writes `value` as pretty JSON to a new file `onejob-<job>-<part>.json` in `folder`, creating
/// the folder if needed; when that name is taken, `onejob-<job>-<part> (2).json` and so on.
pub fn save(folder: &Path, job_id: &str, part: JobPart, value: &Value) -> Result<SavedFile, Error> {
    std::fs::create_dir_all(folder).map_err(|e| cannot(folder, &e))?;
    // Only a name's safe characters: the id came from the ledger, but a file name is no place to trust it.
    let job: String = job_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let stem = format!("onejob-{job}-{}", part.name());
    let (path, file) = new_file(folder, &stem)?;
    let mut out = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| out.flush())
        .map_err(|e| cannot(&path, &e))?;
    let size = std::fs::metadata(&path)
        .map_err(|e| cannot(&path, &e))?
        .len();
    Ok(SavedFile {
        path: path.display().to_string(),
        size: u32::try_from(size).unwrap_or(u32::MAX),
    })
}

/// Creates the first free name of `stem` in `folder`; creating it is the check, so a file that
/// appears meanwhile is still never written over.
fn new_file(folder: &Path, stem: &str) -> Result<(PathBuf, File), Error> {
    for n in 1..=MAX_TRIES {
        let name = match n {
            1 => format!("{stem}.json"),
            n => format!("{stem} ({n}).json"),
        };
        let path = folder.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(cannot(&path, &e)),
        }
    }
    Err(Error::internal(format!(
        "{MAX_TRIES} files named {stem} are already in {}",
        folder.display()
    )))
}

fn cannot(path: &Path, e: &std::io::Error) -> Error {
    Error::internal(format!("cannot write {}: {e}", path.display()))
}
