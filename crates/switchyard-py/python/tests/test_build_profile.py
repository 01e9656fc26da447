"""The wheel is not built with the CLI's fat LTO: every maturin build of it (`pip install
.`, `maturin build --release`, `maturin develop --release`) overrides the workspace's
release profile, which took 21 minutes on 2 cores."""

from pathlib import Path

try:
    import tomllib  # Python 3.11 and later
except ImportError:  # pragma: no cover - older Pythons: the backport, or fail (never skip)
    import tomli as tomllib

HERE = Path(__file__).resolve().parents[2]


def test_maturin_builds_override_the_fat_lto_release_profile():
    workspace = tomllib.loads((HERE.parents[1] / "Cargo.toml").read_text())
    maturin = tomllib.loads((HERE / "pyproject.toml").read_text())["tool"]["maturin"]
    overrides = {}
    for item in maturin.get("config", []):
        key, value = item.split("=", 1)
        overrides[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
    release = workspace["profile"]["release"]
    lto = overrides.get("profile.release.lto", release.get("lto", False))
    units = overrides.get("profile.release.codegen-units", release.get("codegen-units", 16))
    assert lto in (False, "off", "thin"), "the wheel would be built with fat LTO"
    assert units > 1, "the wheel would be built with one codegen unit"
    # No profile setting: `maturin develop` stays a dev build (the tests' build).
    assert "profile" not in maturin
