//! The store's durability modes: in `answered` the last byte of every reply goes out only
//! once its record is written, so a client that has its whole reply finds the record on
//! disk, whole and streamed, passed through and translated, successes and errors; in the
//! fast mode the backlog of answered calls not yet written is held to `max_backlog`.

mod common;

use common::{client_body, gateway_for, path, DIALECTS};
use switchyard::env::MapEnv;
use switchyard::record::read_records;
use switchyard_gateway::{start, GatewayConfig, StoreDurability, StoreOptions};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

async fn running(
    mock: &MockServer,
    dir: &std::path::Path,
    options: StoreOptions,
) -> switchyard_gateway::RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(dir.to_path_buf()),
        store_options: options,
        ..GatewayConfig::default()
    };
    let gateway = gateway_for(&mock.base_url(), config, MapEnv::default(), &[]);
    start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

async fn whole_reply(
    http: &reqwest::Client,
    base: &str,
    client: Dialect,
    model: &str,
    stream: bool,
    prompt: &str,
) -> u16 {
    let body = client_body(client, model, &Request::user(prompt), stream);
    let r = http
        .post(format!("{base}{}", path(client, model, stream)))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    // The whole reply, to its last byte.
    let _ = r.bytes().await.unwrap();
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_a_call_is_on_disk_by_the_time_its_client_has_the_last_byte() {
    for durability in [StoreDurability::Answered, StoreDurability::Synced] {
        let mock = MockServer::start().await;
        let dir = tempfile::tempdir().unwrap();
        let gw = running(
            &mock,
            dir.path(),
            StoreOptions {
                durability,
                ..StoreOptions::default()
            },
        )
        .await;
        let http = reqwest::Client::new();
        let mut answered = 0;
        for client in DIALECTS {
            for backend in [Dialect::Chat, Dialect::Messages] {
                for stream in [false, true] {
                    for model in ["echo", "fault-429"] {
                        let reference = format!("up-{backend}/{model}");
                        let prompt = format!("durable {answered}");
                        let status =
                            whole_reply(&http, &gw.url(), client, &reference, stream, &prompt)
                                .await;
                        answered += 1;
                        let on_disk = read_records(dir.path()).unwrap();
                        assert_eq!(
                            on_disk.len(),
                            answered,
                            "{durability:?}: {client} → {reference} (stream {stream}, status {status}): the reply ended before its record was written"
                        );
                    }
                }
            }
        }
        gw.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_the_backlog_of_answered_calls_stays_within_its_bound() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let bound = 4;
    let gw = running(
        &mock,
        dir.path(),
        StoreOptions {
            durability: StoreDurability::Fast,
            max_backlog: bound,
        },
    )
    .await;
    let http = reqwest::Client::new();
    let calls = (0..200).map(|i| {
        let (http, base) = (http.clone(), gw.url());
        async move {
            whole_reply(
                &http,
                &base,
                Dialect::Chat,
                "mock/echo",
                i % 2 == 0,
                &format!("fast {i}"),
            )
            .await
        }
    });
    let statuses = futures::future::join_all(calls).await;
    assert!(statuses.iter().all(|s| *s == 200));
    // Every call is answered; at most the bound (and the calls closing at that very
    // moment, one per worker thread) may still be waiting for the writer.
    let on_disk = read_records(dir.path()).unwrap().len();
    assert!(
        on_disk + bound + 2 >= 200,
        "{on_disk} of 200 answered calls on disk with a backlog bound of {bound}"
    );
    gw.shutdown().await.unwrap();
    assert_eq!(read_records(dir.path()).unwrap().len(), 200);
}
