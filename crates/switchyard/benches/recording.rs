//! Recording benchmarks (figures in docs/performance.md):
//!
//! 1. throughput of calls to a local fast upstream (the mock, in process) with 4 KB
//!    prompts, many concurrent, with and without a recorder, rounds interleaved so both
//!    see the same machine; medians of the rounds and their ratio;
//! 2. loading the replay index of a 100,000-call log (from calls.sqlite, and from the
//!    records alone), and the index's memory against the prompts' size.
//!
//! `cargo bench -p switchyard --bench recording` (env: CALLS, CONCURRENCY, ROUNDS,
//! INDEX_CALLS to change the sizes).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use switchyard::env::MapEnv;
use switchyard::record::{self, AttemptRecord, CallRecord, RawBytes, RecorderOptions, Timings};
use switchyard::registry::{Config, LoadOptions};
use switchyard::{Llm, Recorder, Request, RunInfo};
use switchyard_mock::MockServer;

fn var(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn prompt(i: usize, size: usize) -> String {
    let mut text = format!("request {i}: ");
    while text.len() < size {
        text.push_str("the quick brown fox jumps over the lazy dog, ");
    }
    text.truncate(size);
    text
}

/// Where run directories go: the target's temporary folder (on this project's machines
/// `/tmp` is a much slower file system for creating files than the work disk).
fn bench_dir() -> tempfile::TempDir {
    let base =
        std::env::var("BENCH_DIR").unwrap_or_else(|_| env!("CARGO_TARGET_TMPDIR").to_string());
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

/// Makes `calls` calls from `concurrency` workers; with `rate`, the calls are released at
/// that many per second (an offered load), else as fast as they go.
async fn run_calls(
    llm: &Llm,
    calls: usize,
    concurrency: usize,
    prompt_size: usize,
    rate: Option<f64>,
) -> Duration {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let llm = llm.clone();
            let next = next.clone();
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= calls {
                        break;
                    }
                    if let Some(rate) = rate {
                        let due = started + Duration::from_secs_f64(i as f64 / rate);
                        tokio::time::sleep_until(due.into()).await;
                    }
                    let reply = llm.complete(Request::user(prompt(i, prompt_size))).await;
                    assert!(reply.is_ok(), "{reply:?}");
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    started.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn throughput() {
    let calls = var("CALLS", 10_000);
    let concurrency = var("CONCURRENCY", 64);
    let rounds = var("ROUNDS", 5);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mock = MockServer::start().await;
        let env = MapEnv::default();
        let mut opts = LoadOptions::new(&env);
        opts.user_file = false;
        opts.overrides = vec![format!("backends.mock.base_url={}", mock.base_url())];
        let config = Config::load(&opts).unwrap();
        let llm = Llm::resolve(&config.registry, "mock/echo", &env).unwrap();
        run_calls(&llm, 2_000, concurrency, 4096, None).await;
        for (label, rate) in [("as fast as they go", None), ("offered at 5,000 calls/s", Some(5000.0))] {
            let mut plain = Vec::new();
            let mut recorded = Vec::new();
            for round in 0..rounds {
                mock.clear();
                let t = run_calls(&llm, calls, concurrency, 4096, rate).await;
                plain.push(calls as f64 / t.as_secs_f64());
                let dir = bench_dir();
                let recorder =
                    Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default())
                        .unwrap();
                let rec = llm.clone().with_recorder(recorder.clone());
                let t = run_calls(&rec, calls, concurrency, 4096, rate).await;
                drop(rec);
                // The index is flushed too: a run is not done before its records are.
                recorder.close().unwrap();
                let t = t.max(Duration::from_nanos(1));
                recorded.push(calls as f64 / t.as_secs_f64());
                let bytes: u64 = std::fs::read_dir(dir.path().join(record::LOG_DIR))
                    .unwrap()
                    .flatten()
                    .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
                    .sum();
                mock.clear();
                println!(
                    "{label}, round {round}: plain {:.0} calls/s, recorded {:.0} calls/s ({:.1} KB per record)",
                    plain[round],
                    recorded[round],
                    bytes as f64 / calls as f64 / 1024.0
                );
            }
            let (p, r) = (median(plain), median(recorded));
            println!(
                "throughput {label}, {calls} calls x {rounds} rounds, {concurrency} concurrent, 4 KB prompts: plain median {p:.0} calls/s, recorded median {r:.0} calls/s, recording costs {:.1}% of throughput",
                (1.0 - r / p) * 100.0
            );
        }
    });
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn synthetic(i: usize, prompt_size: usize) -> CallRecord {
    let request = Request::user(prompt(i, prompt_size));
    let raw = format!(
        "{{\"id\":\"c{i}\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"echo\",\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"ok {i}\"}},\"finish_reason\":\"stop\"}}],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":2,\"total_tokens\":{}}}}}",
        prompt_size / 4,
        prompt_size / 4 + 2
    );
    let now = record::timestamp(SystemTime::now());
    CallRecord {
        format: record::FORMAT,
        number: 0,
        role: Some(format!("role{}", i % 4)),
        reference: "mock/echo".into(),
        backend: "mock".into(),
        model: "echo".into(),
        dialect: Some(switchyard::Dialect::Chat),
        stream: false,
        prompt_digest: record::prompt_digest(&request),
        parameters: record::parameters(&request),
        body: None,
        reply: None,
        raw: Some(RawBytes::new(raw.as_bytes())),
        usage: None,
        usage_reported: None,
        attempts: vec![AttemptRecord {
            number: 1,
            wait_before_ms: 0.0,
            started_at: now.clone(),
            duration_ms: 1.0,
            status: Some(200),
            error_kind: None,
            error: None,
            reference: None,
        }],
        timings: Timings {
            started_at: now.clone(),
            ended_at: now,
            first_byte_ms: None,
            duration_ms: 1.0,
        },
        cost_usd: None,
        provider_cost_usd: None,
        error: None,
        usage_estimated: None,
        client_key: None,
        client_dialect: None,
        embedding: None,
        route: None,
        cut: false,
        raw_truncated: None,
        cache_key: None,
        cache_hit: None,
        cache_hit_call: None,
        cache_run: None,
        depth_capped: false,
        usage_suspect: None,
        over_reservation: None,
        request,
    }
}

fn replay_index() {
    let calls = var("INDEX_CALLS", 100_000);
    let prompt_size = var("INDEX_PROMPT", 1024);
    let dir = bench_dir();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    runtime.block_on(async {
        let recorder =
            Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
        let mut pending = Vec::new();
        for i in 0..calls {
            pending.push(recorder.submit(synthetic(i, prompt_size)));
            if pending.len() >= 1000 {
                futures::future::join_all(pending.drain(..)).await;
            }
        }
        futures::future::join_all(pending).await;
        recorder.close().unwrap();
    });
    println!(
        "wrote a {calls}-call log ({prompt_size} B prompts) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let prompts_bytes = (calls * prompt_size) as f64;
    load(dir.path(), "from calls.sqlite", prompts_bytes);
    std::fs::remove_file(dir.path().join(record::INDEX_FILE)).unwrap();
    load(dir.path(), "from the records alone", prompts_bytes);
}

fn load(dir: &Path, how: &str, prompts_bytes: f64) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..3 {
        drop(last.take());
        let rss = rss_kb();
        let t = Instant::now();
        let log = switchyard::ReplayLog::open(dir).unwrap();
        times.push(t.elapsed().as_secs_f64());
        let grown = rss_kb().saturating_sub(rss) as f64 * 1024.0;
        println!(
            "  index {how}: {:.3} s, {:.1} MB counted, RSS +{:.1} MB, prompts {:.1} MB ({:.3}x counted)",
            times.last().unwrap(),
            log.index_bytes() as f64 / 1e6,
            grown / 1e6,
            prompts_bytes / 1e6,
            log.index_bytes() as f64 / prompts_bytes
        );
        last = Some(log);
    }
    println!("replay index load {how}: median {:.3} s", median(times));
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument picks one part.
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if which.is_empty() || which.iter().any(|w| w == "throughput") {
        throughput();
    }
    if which.is_empty() || which.iter().any(|w| w == "index") {
        replay_index();
    }
}
