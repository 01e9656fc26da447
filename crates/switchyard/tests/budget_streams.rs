//! A run budget holds when the provider ignores `max_tokens` (issue 33, point 5): the
//! library's streams hold what they have spent in the budget as they stream, and are
//! stopped once the run would pass `max_usd` with their next step. The mock never keeps
//! to an output limit: `lorem-400` with `max_tokens: 16` is a provider that goes on past it.

use std::sync::Arc;
use switchyard::env::MapEnv;
use switchyard::registry::{Config, LoadOptions};
use switchyard::{Budget, BudgetTracker, Dialect, Error, ErrorKind, Llm, Request};
use switchyard_mock::MockServer;

const RUNAWAY: &str = "lorem-400+chunk-8+delay-1ms";

fn llm(mock: &MockServer, dialect: Dialect) -> Llm {
    let env = MapEnv::new([("MOCK_API_KEY", "sk-test")]);
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![
        format!("backends.mock.base_url={}", mock.base_url()),
        format!("backends.mock.prices.{RUNAWAY}={{input: 1, output: 2}}"),
    ];
    let config = Config::load(&opts).expect("config loads");
    let backend = config.registry.backend("mock").expect("mock backend");
    let http = switchyard::connect::http_backend(backend, RUNAWAY, Some(dialect), &env)
        .expect("http backend");
    Llm::new(format!("mock/{RUNAWAY}"), Arc::new(http), RUNAWAY)
        .with_price(backend.price(RUNAWAY).map(|p| p.value))
        .with_sleeper(Arc::new(switchyard::RecordingSleeper::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_streams_past_max_tokens_are_stopped_at_the_run_budget() {
    let mock = MockServer::start().await;
    let max_usd = 0.01;
    let budget = Arc::new(BudgetTracker::new(Budget {
        max_usd: Some(max_usd),
        ..Budget::default()
    }));
    let calls = 48;
    let handles: Vec<Llm> = [
        Dialect::Chat,
        Dialect::Responses,
        Dialect::Messages,
        Dialect::Gemini,
    ]
    .into_iter()
    .map(|d| llm(&mock, d).with_budget(budget.clone()))
    .collect();
    let results = futures::future::join_all((0..calls).map(|i| {
        let llm = handles[i % 4].clone();
        async move {
            let request = Request::user("go on").with_max_tokens(16);
            match llm.stream(request).await {
                Ok(stream) => stream.into_reply().await.map(|r| r.text().len()),
                Err(e) => Err(e),
            }
        }
    }))
    .await;
    let stopped: Vec<&Error> = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .filter(|e| matches!(e, Error::BudgetStopped { .. }))
        .collect();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(Error::BudgetExceeded { .. })))
        .count();
    let whole = results.iter().filter(|r| r.is_ok()).count();
    assert!(!stopped.is_empty(), "{results:?}");
    assert_eq!(stopped.len() + refused + whole, calls, "{results:?}");
    assert_eq!(whole, 0, "every stream runs past the budget: {results:?}");
    let e = stopped[0];
    assert_eq!(e.kind(), ErrorKind::BudgetExceeded);
    assert!(
        e.to_string().contains("max_usd is $0.01")
            && e.to_string().contains("the stream was stopped"),
        "{e}"
    );
    let spend = budget.spend();
    assert_eq!(spend.in_flight, 0);
    assert!(spend.reserved_usd.abs() < 1e-12, "{spend:?}");
    // Each stream that was let through may hold, beyond the budget, what it spent at the
    // step that was stopped: its prompt (the request's JSON ÷ 4, some 30 tokens at $1 per
    // million) and a delta (8 characters, 2 tokens at $2): far from the 400 words
    // (about 670 tokens, $0.00134) each would have cost.
    let in_flight_bound = (stopped.len() + whole) as f64 * (40e-6 + 4e-6);
    let unstopped = (stopped.len() + whole) as f64 * 670.0 * 2e-6;
    println!(
        "{} streams stopped, {refused} refused; spent ${:.6} of ${max_usd}; unstopped they would have cost about ${unstopped:.4}",
        stopped.len(),
        spend.usd
    );
    assert!(
        spend.usd > 0.5 * max_usd && spend.usd <= max_usd + in_flight_bound,
        "spent {} of {max_usd} (bound {in_flight_bound})",
        spend.usd
    );
    assert!(unstopped > 3.0 * max_usd);
}

/// A route's stream is held at the price of the member that serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routes_stream_past_max_tokens_is_stopped_at_the_run_budget() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", "sk-test")]);
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![
        format!("backends.mock.base_url={}", mock.base_url()),
        format!("backends.mock.prices.{RUNAWAY}={{input: 1, output: 2}}"),
        "backends.mock.prices.echo={input: 1, output: 2}".into(),
        format!("routes.r.try=[mock/{RUNAWAY}, mock/echo]"),
    ];
    let config = Config::load(&opts).expect("config loads");
    let max_usd = 0.000_1;
    let budget = Arc::new(BudgetTracker::new(Budget {
        max_usd: Some(max_usd),
        ..Budget::default()
    }));
    let llm = Llm::resolve_with(
        &config.registry,
        "r",
        &env,
        switchyard::CallPolicy::default(),
    )
    .expect("the route resolves")
    .with_budget(budget.clone());
    let stream = llm
        .stream(Request::user("go on").with_max_tokens(16))
        .await
        .expect("a stream");
    let e = stream.into_reply().await.expect_err("stopped");
    assert!(matches!(e, Error::BudgetStopped { .. }), "{e}");
    let spend = budget.spend();
    assert!(
        spend.usd > 0.5 * max_usd && spend.usd <= max_usd + 44e-6,
        "{spend:?}"
    );
}
