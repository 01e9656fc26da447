//! `_bench_rust_complete`: the Rust side of the overhead benchmark
//! (`bench/overhead.py`). It times the library's own `Llm::complete` on the same handle a
//! Python caller holds, one call after another on the module's runtime, so that the
//! Python figure minus this one is what the Python layer adds.

use std::time::Instant;

use pyo3::prelude::*;
use switchyard::{Message, Request, Role};

use crate::errors;
use crate::llm::Llm;
use crate::runtime;

/// Calls `llm` `n` times from Rust with the request `complete(prompt, max_tokens=…)`
/// would build, each request built inside the timed span as a Rust caller builds it, and
/// gives each call's duration in nanoseconds. The GIL is released throughout.
#[pyfunction]
#[pyo3(signature = (llm, prompt, n, max_tokens = None))]
pub(crate) fn _bench_rust_complete(
    py: Python<'_>,
    llm: &Llm,
    prompt: String,
    n: usize,
    max_tokens: Option<u64>,
) -> PyResult<Vec<u64>> {
    let llm = llm.inner.clone();
    py.detach(move || {
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            let request = Request {
                messages: vec![Message::text(Role::User, &prompt)],
                max_tokens,
                ..Request::default()
            };
            let reply = runtime::runtime().block_on(llm.complete(request));
            let elapsed = start.elapsed();
            std::hint::black_box(reply.map_err(errors::to_py)?);
            times.push(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
        }
        Ok(times)
    })
}
