mod common;

use common::{gateway_for, path};
use switchyard::env::MapEnv;
use switchyard::record::{read_records};
use switchyard_gateway::{start, GatewayConfig};
use switchyard_mock::MockServer;
use switchyard_wire::Dialect;

fn nested(levels: usize) -> String {
    format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn experiment() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(dir.path().to_path_buf()),
        store_options: switchyard_gateway::StoreOptions { durability: switchyard_gateway::StoreDurability::Answered, ..Default::default() },
        ..GatewayConfig::default()
    };
    let gw = gateway_for(&mock.base_url(), config, MapEnv::default(), &[]);
    let gw = start(gw, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let http = reqwest::Client::new();
    for d in [Dialect::Chat, Dialect::Responses, Dialect::Messages, Dialect::Gemini] {
        for depth in [2usize, 120, 124, 125, 126, 127, 128, 129] {
            // body depth = depth: the top object is 1, metadata's value adds depth - 1.
            let deep = nested(depth - 1);
            let body = match d {
                Dialect::Chat => format!(r#"{{"model":"mock/echo","messages":[{{"role":"user","content":"hi"}}],"metadata":{deep}}}"#),
                Dialect::Responses => format!(r#"{{"model":"mock/echo","input":"hi","metadata":{deep}}}"#),
                Dialect::Messages => format!(r#"{{"model":"mock/echo","max_tokens":5,"messages":[{{"role":"user","content":"hi"}}],"metadata":{deep}}}"#),
                Dialect::Gemini => format!(r#"{{"contents":[{{"role":"user","parts":[{{"text":"hi"}}]}}],"labels":{deep}}}"#),
            };
            let r = http.post(format!("{}{}", gw.url(), path(d, "mock/echo", false))).header("content-type","application/json").body(body).send().await.unwrap();
            let s = r.status().as_u16();
            let b = r.text().await.unwrap();
            let read = read_records(dir.path());
            println!("{d} depth {depth}: {s} {} read: {}", &b[..b.len().min(200)], match &read { Ok(v) => format!("ok {}", v.len()), Err(e) => format!("ERR {}", &e.to_string()[..200.min(e.to_string().len())]) });
        }
    }
    gw.shutdown().await.unwrap();
}
