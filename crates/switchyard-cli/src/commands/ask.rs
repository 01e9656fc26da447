//! `switchyard ask`: one question, the reply, and a usage line.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use super::CliEnv;
use futures::StreamExt;
use switchyard::registry::Config;
use switchyard::run::OneCall;
use switchyard::wire::{Event, Request};
use switchyard::{Llm, Reply, RetryPolicy};

use crate::cli::AskArgs;

/// Runs `ask`.
pub(super) fn run(config: &Config, args: &AskArgs) -> Result<(), String> {
    // Waits between attempts are announced as warnings: show the library's, briefly, on
    // stderr (not those of the crates below it, which the library reports itself).
    let _ = tracing_subscriber::fmt()
        .with_writer(|| crate::redacting::Redacting(std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::new("switchyard=warn"))
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .with_target(false)
        .try_init();
    // `ask` is a run of one role: the library's one assembly (model, settings, retry,
    // timeouts, routes, cache, budget, recorder, prices), `--role` naming a role of the
    // config (or a name for the caller when the config has none of that name).
    let mut builder = match &config.run_config {
        Some(path) => switchyard::Run::builder(path),
        None => switchyard::Run::builder_without_config(),
    }
    .overrides(args.overrides.iter().cloned())
    .env(&CliEnv)
    .resume(args.resume)
    // The export is started below, and flushed when `ask` returns.
    .trace(false)
    .one_call(OneCall {
        role: args.role.clone(),
        reference: args.reference.clone(),
        ..OneCall::default()
    });
    if let Some(dir) = &args.log {
        builder = builder.log(dir);
    }
    if let Some(run_dir) = &args.replay {
        builder = builder.replay(run_dir);
    }
    let run = builder.open().map_err(|e| format!("error: {e}"))?;
    let mut llm = run.call_llm().map_err(|e| format!("error: {e}"))?;
    let recorder = run.recorder().cloned();
    if args.no_retry {
        llm = llm.with_retry(RetryPolicy::never());
    }
    // Dropped when `ask` returns: the call's spans are sent before the process exits.
    let _otel = super::otel::start(config)?;
    let mut request = Request::user(args.prompt.clone());
    if let Some(system) = &args.system {
        request = request.with_system(system.clone());
    }
    request.max_tokens = args.max_tokens;
    let stream = !args.json && !args.no_stream && (args.stream || std::io::stdout().is_terminal());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    let started = Instant::now();
    let reply = runtime.block_on(async {
        if stream {
            print_stream(&llm, request).await
        } else {
            llm.complete(request)
                .await
                .map_err(|e| format!("error: {e}"))
        }
    });
    // The record is written even when the call failed.
    if let Some(recorder) = recorder {
        recorder.close().map_err(|e| format!("error: {e}"))?;
    }
    let reply = reply?;
    let elapsed = started.elapsed();

    if args.json {
        // The reply with what it cost, by the library's one rule (`null`: unknown).
        let mut value =
            serde_json::to_value(&reply).map_err(|e| format!("error: cannot write JSON: {e}"))?;
        if let Some(object) = value.as_object_mut() {
            object.insert("cost_usd".into(), serde_json::json!(llm.cost(&reply)));
        }
        let json = serde_json::to_string_pretty(&value)
            .map_err(|e| format!("error: cannot write JSON: {e}"))?;
        println!("{json}");
    } else if !stream {
        let thinking = reply.thinking();
        if !thinking.is_empty() {
            eprintln!("[thinking] {thinking}");
        }
        let text = reply.text();
        // A reply that only calls tools prints no empty line before them.
        if !text.is_empty() || reply.tool_calls().next().is_none() {
            println!("{text}");
        }
        for call in reply.tool_calls() {
            println!("[tool call {}] {}({})", call.id, call.name, call.arguments);
        }
    }
    eprintln!("{}", usage_line(&llm, &reply, elapsed));
    Ok(())
}

/// Prints text as it arrives (thinking to standard error, under a `[thinking]` label and
/// ended by a newline) and returns the whole reply.
async fn print_stream(llm: &Llm, request: Request) -> Result<Reply, String> {
    let mut stream = llm
        .stream(request)
        .await
        .map_err(|e| format!("error: {e}"))?;
    let mut out = std::io::stdout().lock();
    let mut thinking = Thinking::default();
    while let Some(event) = stream.next().await {
        if !matches!(event, Ok(Event::ThinkingDelta { .. })) {
            thinking.end();
        }
        match event {
            Ok(Event::TextDelta { text, .. }) => {
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
            Ok(Event::ThinkingDelta { text, .. }) => thinking.write(&text),
            Ok(Event::ToolCallEnd { part }) => {
                if let Some(switchyard::Part::ToolCall(call)) = stream.reply().content.get(part) {
                    let _ = writeln!(
                        out,
                        "[tool call {}] {}({})",
                        call.id, call.name, call.arguments
                    );
                }
            }
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(out);
                let shown = stream.reply().text().chars().count();
                if shown > 0 {
                    return Err(format!(
                        "error: {e}\n(the reply stopped after {shown} characters of output, shown above; it was not sent again)"
                    ));
                }
                return Err(format!("error: {e}"));
            }
        }
    }
    thinking.end();
    let _ = writeln!(out);
    // The stream itself ends with `ProviderReplyMalformed` when its reply is not one.
    Ok(stream.reply())
}

/// Thinking streamed to standard error: `[thinking] ` before the first piece of each
/// run of it, a newline after it, so the text and the usage line start on lines of their
/// own.
#[derive(Default)]
struct Thinking {
    open: bool,
}

impl Thinking {
    fn write(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        if !self.open {
            let _ = err.write_all(b"[thinking] ");
            self.open = true;
        }
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }

    fn end(&mut self) {
        if std::mem::take(&mut self.open) {
            eprintln!();
        }
    }
}

fn usage_line(llm: &Llm, reply: &Reply, elapsed: std::time::Duration) -> String {
    let model = reply.model.as_deref().unwrap_or(llm.model());
    let usage = match reply.usage {
        Some(u) => {
            let mut text = format!("{} in", u.input);
            if u.cached_input > 0 || u.cache_write > 0 {
                text.push_str(&format!(
                    " ({} cached, {} cache write)",
                    u.cached_input, u.cache_write
                ));
            }
            text.push_str(&format!(" · {} out", u.output));
            if u.reasoning > 0 {
                text.push_str(&format!(" ({} reasoning)", u.reasoning));
            }
            text
        }
        None => "usage not reported".to_string(),
    };
    // Not lowercased as a whole: model ids are case-sensitive (`vllm/Qwen/Qwen3-8B`).
    // What the call cost, as the record and the budget count it.
    let cost = match llm.cost(reply) {
        Some(_) => switchyard::internal::cost::fmt_cost(llm.cost(reply)),
        None => "cost unknown".to_string(),
    };
    format!(
        "[{} · {model} · {usage} · {cost} · finish {} · {:.2} s]",
        llm.label(),
        reply.finish.as_str(),
        elapsed.as_secs_f64()
    )
}
