//! Stand-in executables written so that running one never fails with "Text file busy".

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Writes `script` as an executable at `path`. The bytes are copied there by a child
/// process (`cp`), so this test process never holds a descriptor open for writing the
/// file: another test thread forking at that moment (to run its own stand-in) would
/// inherit such a descriptor until its child's exec, and running the file meanwhile
/// fails with ETXTBSY ("Text file busy").
pub(crate) fn write_executable(path: &Path, script: &str) {
    let source = path.with_extension("source");
    std::fs::write(&source, script).unwrap();
    let copied = std::process::Command::new("cp")
        .arg(&source)
        .arg(path)
        .status()
        .unwrap();
    assert!(
        copied.success(),
        "cp {} {}",
        source.display(),
        path.display()
    );
    std::fs::remove_file(&source).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
