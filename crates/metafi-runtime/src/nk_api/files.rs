//! `file_read(relative_path)`: a file under the module directory (`runtime.path`), as text.
//!
//! Stricter than Nakama, which joins any path to its root: absolute paths and `..` are refused,
//! and the file's real path (symbolic links resolved) must still lie under the root, so a
//! script cannot read outside the module directory. Files larger than
//! `runtime.file_read_max_bytes` are refused. The read runs off the VM thread.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[NkFunction {
    lua: Some("file_read"),
    js: Some("fileRead"),
    call: NkCall::Async(file_read),
}];

fn file_read(nk: Nk, args: NkArgs) -> NkFuture {
    let relative = args
        .at(1)
        .non_empty("expects relative path string")
        .map(str::to_owned);
    let root = nk.utilities().config.modules_root.clone();
    let max_bytes = nk.utilities().config.file_read_max_bytes;
    let js = args.is_js();
    Box::pin(async move {
        let relative = relative?;
        let root = root.ok_or_else(|| {
            NkError::failed("nk.file_read is not available: the runtime has no module directory")
        })?;
        let content = tokio::task::spawn_blocking(move || read_under(&root, &relative, max_bytes))
            .await
            .map_err(|e| NkError::failed(format!("failed to read file: {e}")))??;
        Ok(match String::from_utf8(content) {
            Ok(text) => NkValue::Str(text),
            Err(e) if js => NkValue::Str(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Err(e) => NkValue::Bytes(e.into_bytes()),
        })
    })
}

/// Reads `relative` under `root`, refusing any path that leads outside it.
fn read_under(root: &Path, relative: &str, max_bytes: usize) -> Result<Vec<u8>, NkError> {
    let escapes = || {
        NkError::failed(format!(
            "failed to open file: {relative}: the path leads outside the module directory"
        ))
    };
    let path = Path::new(relative);
    if !path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(escapes());
    }
    let open_error = |e: io::Error| {
        let reason = match e.kind() {
            io::ErrorKind::NotFound => "no such file or directory".to_owned(),
            io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
            _ => e.to_string(),
        };
        NkError::failed(format!("failed to open file: open {relative}: {reason}"))
    };
    let root: PathBuf = root.canonicalize().map_err(open_error)?;
    let real = root.join(path).canonicalize().map_err(open_error)?;
    if !real.starts_with(&root) {
        return Err(escapes());
    }
    if real.is_dir() {
        return Err(NkError::failed(format!(
            "failed to read file: read {relative}: is a directory"
        )));
    }
    let too_large = || {
        NkError::failed(format!(
            "failed to read file: {relative} is larger than {max_bytes} bytes (runtime.file_read_max_bytes)"
        ))
    };
    let file = std::fs::File::open(&real).map_err(open_error)?;
    let mut content = Vec::new();
    // One byte past the limit tells a file that is too large from one that fits exactly.
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    io::Read::read_to_end(&mut io::Read::take(file, limit), &mut content)
        .map_err(|e| NkError::failed(format!("failed to read file: {e}")))?;
    if content.len() > max_bytes {
        return Err(too_large());
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::test_support::{nk_with, on};
    use crate::nk_api::{Naming, UtilityConfig};

    async fn setup() -> (tempfile::TempDir, crate::nk_api::test_support::TestNk) {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("modules");
        std::fs::create_dir_all(modules.join("data")).unwrap();
        std::fs::write(modules.join("data/levels.json"), r#"{"levels":3}"#).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
        let t = nk_with(UtilityConfig {
            modules_root: Some(modules),
            ..UtilityConfig::default()
        })
        .await;
        (dir, t)
    }

    #[tokio::test]
    async fn reads_a_file_under_the_module_directory() {
        let (_dir, t) = setup().await;
        assert_eq!(
            on(
                &t.nk,
                Naming::Snake,
                "file_read",
                vec!["data/levels.json".into()]
            )
            .await,
            Ok(r#"{"levels":3}"#.into())
        );
        assert_eq!(
            on(
                &t.nk,
                Naming::Camel,
                "fileRead",
                vec!["./data/levels.json".into()]
            )
            .await,
            Ok(r#"{"levels":3}"#.into())
        );
        assert_eq!(
            on(
                &t.nk,
                Naming::Snake,
                "file_read",
                vec!["data/none.txt".into()]
            )
            .await,
            Err(NkError::failed(
                "failed to open file: open data/none.txt: no such file or directory"
            ))
        );
    }

    #[tokio::test]
    async fn files_past_the_limit_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fits.txt"), "12345678").unwrap();
        std::fs::write(dir.path().join("big.txt"), "123456789").unwrap();
        let t = nk_with(UtilityConfig {
            modules_root: Some(dir.path().to_owned()),
            file_read_max_bytes: 8,
            ..UtilityConfig::default()
        })
        .await;
        assert_eq!(
            on(&t.nk, Naming::Snake, "file_read", vec!["fits.txt".into()]).await,
            Ok("12345678".into())
        );
        assert_eq!(
            on(&t.nk, Naming::Snake, "file_read", vec!["big.txt".into()]).await,
            Err(NkError::failed(
                "failed to read file: big.txt is larger than 8 bytes (runtime.file_read_max_bytes)"
            ))
        );
    }

    #[tokio::test]
    async fn paths_out_of_the_module_directory_are_refused() {
        let (dir, t) = setup().await;
        let outside = dir.path().join("secret.txt");
        std::os::unix::fs::symlink(&outside, dir.path().join("modules/link.txt")).unwrap();
        for path in [
            "../secret.txt".to_owned(),
            "data/../../secret.txt".to_owned(),
            outside.display().to_string(),
            "link.txt".to_owned(),
        ] {
            let result = on(&t.nk, Naming::Snake, "file_read", vec![path.clone().into()]).await;
            assert_eq!(
                result,
                Err(NkError::failed(format!(
                    "failed to open file: {path}: the path leads outside the module directory"
                ))),
                "{path}"
            );
        }
        assert_eq!(
            on(&t.nk, Naming::Snake, "file_read", vec!["".into()]).await,
            Err(NkError::Arg {
                position: 1,
                message: "expects relative path string".into()
            })
        );
    }
}
