//! The counters of the kept conversations (`crate::conversations`), by kind: turns kept,
//! histories expanded from them, references not held, turns deleted, and writes that
//! failed.

use crate::conversations::turn::Kind;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// One counter per kind (response, thread).
#[derive(Default)]
struct ByKind([AtomicU64; 2]);

impl ByKind {
    fn add(&self, kind: Kind) {
        let i = match kind {
            Kind::Response => 0,
            Kind::Thread => 1,
        };
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (i, kind) in [Kind::Response, Kind::Thread].iter().enumerate() {
            let n = self.0[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}{{kind=\"{}\"}} {n}", kind.as_str());
        }
    }
}

/// The kept conversations' counters.
#[derive(Default)]
pub(crate) struct KeptCounts {
    kept: ByKind,
    expanded: ByKind,
    not_found: ByKind,
    deleted: ByKind,
    failed: AtomicU64,
}

impl KeptCounts {
    /// A turn was kept.
    pub(crate) fn kept(&self, kind: Kind) {
        self.kept.add(kind);
    }

    /// A request's history was expanded from kept turns.
    pub(crate) fn expanded(&self, kind: Kind) {
        self.expanded.add(kind);
    }

    /// A request named state nobody on its call holds (answered 404).
    pub(crate) fn not_found(&self, kind: Kind) {
        self.not_found.add(kind);
    }

    /// A client deleted a kept turn.
    pub(crate) fn deleted(&self, kind: Kind) {
        self.deleted.add(kind);
    }

    /// A turn could not be written (the store's error is logged).
    pub(crate) fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters in Prometheus' text format.
    pub(crate) fn render(&self, out: &mut String) {
        let p = "switchyard_gateway_conversations";
        self.kept.render(
            out,
            &format!("{p}_kept_total"),
            "Turns of the stateful APIs kept for clients (Responses responses, thread replies).",
        );
        self.expanded.render(out, &format!("{p}_expanded_total"), "Requests whose history was expanded from kept turns (previous_response_id, item_reference, thread continue).");
        self.not_found.render(out, &format!("{p}_not_found_total"), "Requests naming a response, item or thread that nobody on the call holds (answered 404).");
        self.deleted.render(
            out,
            &format!("{p}_deleted_total"),
            "Kept turns deleted by their clients.",
        );
        let name = format!("{p}_failed_total");
        let _ = writeln!(
            out,
            "# HELP {name} Turns that could not be kept (the store failed; logged).\n# TYPE {name} counter\n{name} {}",
            self.failed.load(Ordering::Relaxed)
        );
    }
}
