//! Module discovery: the files under `runtime.path`, grouped by the engine that loads them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::LoadError;
use crate::host::ModuleSource;

/// Most module files read at start; a guard against pointing `runtime.path` at `/`.
pub const MAX_MODULE_FILES: usize = 10_000;

/// Every file under `root` (recursively, hidden entries skipped) whose extension is in
/// `extensions`, sorted by path. A missing `root` yields no modules.
pub fn discover(root: &Path, extensions: &[&str]) -> Result<Vec<ModuleSource>, LoadError> {
    let mut files = Vec::new();
    if !root.exists() {
        return Ok(Vec::new());
    }
    collect(root, extensions, &mut files)?;
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| LoadError::Module {
                path: path.clone(),
                line: 0,
                message: format!("cannot read the module as UTF-8 text: {e}"),
            })?;
            Ok(ModuleSource {
                name: module_name(root, &path),
                path,
                text: Arc::from(text),
            })
        })
        .collect()
}

fn collect(dir: &Path, extensions: &[&str], files: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| LoadError::Directory {
        path: dir.to_owned(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| LoadError::Directory {
            path: dir.to_owned(),
            source,
        })?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(&path, extensions, files)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.iter().any(|x| x.eq_ignore_ascii_case(e)))
        {
            if files.len() >= MAX_MODULE_FILES {
                return Err(LoadError::Module {
                    path,
                    line: 0,
                    message: format!(
                        "more than {MAX_MODULE_FILES} module files; is runtime.path the right directory?"
                    ),
                });
            }
            files.push(path);
        }
    }
    Ok(())
}

/// `games/chess.lua` under `root` → `games.chess`.
fn module_name(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path).with_extension("");
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_use_dots_for_directories() {
        let root = Path::new("/m");
        assert_eq!(module_name(root, Path::new("/m/echo.lua")), "echo");
        assert_eq!(
            module_name(root, Path::new("/m/games/chess.lua")),
            "games.chess"
        );
    }

    #[test]
    fn a_missing_directory_has_no_modules() {
        let modules = discover(Path::new("/nonexistent/metafi/modules"), &["lua"]).unwrap();
        assert!(modules.is_empty());
    }
}
