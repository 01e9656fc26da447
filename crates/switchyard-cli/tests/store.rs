//! `switchyard store migrate` as the built binary: the URL only from the environment
//! (an unset variable and a URL in place of a name each refused, saying what to do), and
//! against a real PostgreSQL (`scripts/pg`; failing under CI without it) the schema
//! created, then found up to date.

mod common;

use common::{run, switchyard};

#[test]
fn an_unset_variable_or_a_url_in_place_of_its_name_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(["store", "migrate"]));
    assert!(!r.ok);
    assert!(r.err.contains("SWITCHYARD_PG_URL is not set"), "{}", r.err);

    let r = run(switchyard(home.path()).args([
        "store",
        "migrate",
        "--url-env",
        "postgres://u:hunter2@h/db",
    ]));
    assert!(!r.ok);
    assert!(r.err.contains("url_env: SWITCHYARD_PG_URL"), "{}", r.err);
    assert!(
        !r.err.contains("hunter2") && !r.out.contains("hunter2"),
        "{}",
        r.err
    );
}

#[test]
fn migrate_creates_the_schema_then_has_nothing_to_do() {
    let Ok(admin_url) = std::env::var("SWITCHYARD_TEST_PG_URL") else {
        let how = "start one with `eval \"$(scripts/pg start)\"` (stop it with `scripts/pg stop`)";
        assert!(
            std::env::var_os("CI").is_none(),
            "SWITCHYARD_TEST_PG_URL is not set under CI: {how}"
        );
        eprintln!("skipped: no PostgreSQL for this test; {how}");
        return;
    };
    let db = "sy_cli_migrate";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let admin = switchyard_gateway::pg::connect(&admin_url).await.unwrap();
        for sql in [
            format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
            format!("CREATE DATABASE {db}"),
        ] {
            admin.batch_execute(&sql).await.unwrap();
        }
    });
    let base = admin_url.split('?').next().unwrap();
    let url = format!("{}/{db}", base.rsplit_once('/').unwrap().0);
    let home = tempfile::tempdir().unwrap();
    let migrate = || {
        run(switchyard(home.path())
            .args(["store", "migrate", "--url-env", "PG"])
            .env("PG", &url))
    };
    let first = migrate();
    assert!(first.ok, "{}", first.err);
    assert!(
        first.out.contains(&format!(
            "schema upgraded from version 0 to {}",
            switchyard_gateway::pg::schema::SCHEMA_VERSION
        )),
        "{}",
        first.out
    );
    let again = migrate();
    assert!(again.ok, "{}", again.err);
    assert!(
        again.out.contains(&format!(
            "schema at version {}, nothing to do",
            switchyard_gateway::pg::schema::SCHEMA_VERSION
        )),
        "{}",
        again.out
    );
}
