//! A gateway in front of a mock provider, with one backend per upstream dialect
//! (`up-chat`, `up-responses`, `up-messages`, `up-gemini`: the mock restricted to one
//! dialect), and a client that speaks any dialect through the wire crate's codecs.

#![allow(dead_code)]

pub(crate) mod hostile;
pub(crate) mod npm;
#[cfg(feature = "postgres")]
pub(crate) mod pg;
pub(crate) mod python;
pub(crate) mod raw_http;
pub(crate) mod recording;
pub(crate) mod stub;

use std::sync::Arc;
use switchyard::env::MapEnv;
use switchyard::registry::{Config, LoadOptions};
use switchyard_gateway::{start, Gateway, GatewayConfig, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::{codec, ByteStreamDecoder, Dialect, EncodeOptions, Reply, Request};

pub(crate) const DIALECTS: [Dialect; 4] = [
    Dialect::Chat,
    Dialect::Responses,
    Dialect::Messages,
    Dialect::Gemini,
];

pub(crate) struct Harness {
    pub mock: MockServer,
    pub gateway: Option<RunningGateway>,
    pub url: String,
    pub http: reqwest::Client,
}

impl Harness {
    /// A gateway that does not retry (tests see each upstream answer as it is).
    pub(crate) async fn start() -> Harness {
        let config = GatewayConfig {
            retry: switchyard::RetryPolicy::never(),
            ..GatewayConfig::default()
        };
        Harness::start_with(config, MapEnv::default()).await
    }

    pub(crate) async fn start_with(config: GatewayConfig, env: MapEnv) -> Harness {
        Harness::around(MockServer::start().await, config, env, &[]).await
    }

    /// A gateway in front of `mock`, with `extra` config overrides.
    pub(crate) async fn around(
        mock: MockServer,
        config: GatewayConfig,
        env: MapEnv,
        extra: &[String],
    ) -> Harness {
        let gateway = gateway_for(&mock.base_url(), config, env, extra);
        let running = start(gateway, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        Harness {
            url: running.url(),
            mock,
            gateway: Some(running),
            http: reqwest::Client::new(),
        }
    }

    /// Sends `request` as `client` would to `model`; returns status and body bytes.
    pub(crate) async fn send(
        &self,
        client: Dialect,
        model: &str,
        request: &Request,
        stream: bool,
    ) -> (u16, Vec<u8>) {
        let body = client_body(client, model, request, stream);
        let r = self
            .http
            .post(format!("{}{}", self.url, path(client, model, stream)))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.bytes().await.unwrap().to_vec())
    }

    /// The gateway's `/metrics` text.
    pub(crate) async fn metrics(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Sends and decodes a successful reply (whole or streamed) in `client`'s dialect.
    pub(crate) async fn ask(
        &self,
        client: Dialect,
        model: &str,
        request: &Request,
        stream: bool,
    ) -> Reply {
        let (status, body) = self.send(client, model, request, stream).await;
        assert_eq!(
            status,
            200,
            "{client} → {model} (stream {stream}): {}",
            String::from_utf8_lossy(&body)
        );
        decode(client, &body, stream)
    }
}

pub(crate) fn gateway_for(
    mock_base: &str,
    config: GatewayConfig,
    env: MapEnv,
    extra: &[String],
) -> Gateway {
    gateway_waiting(
        mock_base,
        config,
        env,
        extra,
        Arc::new(switchyard::TokioSleeper),
    )
}

/// [`gateway_for`] whose retry loop waits through `sleeper` (a `RecordingSleeper` makes
/// every retry wait instant).
pub(crate) fn gateway_waiting(
    mock_base: &str,
    config: GatewayConfig,
    env: MapEnv,
    extra: &[String],
    sleeper: Arc<dyn switchyard::Sleeper>,
) -> Gateway {
    let mut overrides = vec![format!("backends.mock.base_url={mock_base}")];
    for d in DIALECTS {
        let name = format!("up-{d}");
        overrides.push(format!("backends.{name}.from=mock"));
        overrides.push(format!("backends.{name}.apis=[{d}]"));
    }
    overrides.extend(extra.iter().cloned());
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = overrides;
    let loaded = Config::load(&opts).unwrap_or_else(|e| panic!("{e:?}"));
    let mut gateway = Gateway::with_sleeper(&config, loaded.registry, Arc::new(env), sleeper)
        .unwrap_or_else(|e| panic!("{e:?}"));
    // As `switchyard serve` runs it: connections on lanes of their own.
    gateway.set_lanes(2);
    gateway
}

pub(crate) fn client_body(
    client: Dialect,
    model: &str,
    request: &Request,
    stream: bool,
) -> Vec<u8> {
    let body = codec(client)
        .encode_request(request, &EncodeOptions { model, stream })
        .unwrap();
    serde_json::to_vec(&body).unwrap()
}

pub(crate) fn path(client: Dialect, model: &str, stream: bool) -> String {
    match client {
        Dialect::Chat => "/v1/chat/completions".into(),
        Dialect::Responses => "/v1/responses".into(),
        Dialect::Messages => "/v1/messages".into(),
        Dialect::Gemini if stream => {
            format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
        }
        Dialect::Gemini => format!("/v1beta/models/{model}:generateContent"),
    }
}

pub(crate) fn decode(client: Dialect, body: &[u8], stream: bool) -> Reply {
    if !stream {
        return codec(client)
            .decode_reply(body)
            .unwrap_or_else(|e| panic!("{client}: {e}: {}", String::from_utf8_lossy(body)));
    }
    let mut decoder = ByteStreamDecoder::new(codec(client));
    let mut events = decoder
        .push(body)
        .unwrap_or_else(|e| panic!("{client}: {e}: {}", String::from_utf8_lossy(body)));
    events.extend(
        decoder
            .finish()
            .unwrap_or_else(|e| panic!("{client}: {e}: {}", String::from_utf8_lossy(body))),
    );
    switchyard_wire::assemble(&events).unwrap_or_else(|e| panic!("{client}: {e:?}"))
}

/// The upstream path the mock saw last.
pub(crate) fn upstream_dialect_of(path: &str) -> Dialect {
    if path.ends_with("/chat/completions") {
        Dialect::Chat
    } else if path.ends_with("/responses") {
        Dialect::Responses
    } else if path.ends_with("/messages") {
        Dialect::Messages
    } else {
        Dialect::Gemini
    }
}
