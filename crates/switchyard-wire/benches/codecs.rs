//! Criterion benches of each codec on a ~10 KB request and reply.
//! Each dialect adds its group in its own file under `benches/codecs/`.
// criterion's macros write undocumented public functions.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};

mod codecs {
    pub(crate) mod chat;
    pub(crate) mod gemini;
    pub(crate) mod messages;
    pub(crate) mod responses;
}

fn all(c: &mut Criterion) {
    codecs::chat::bench(c);
    codecs::responses::bench(c);
    codecs::messages::bench(c);
    codecs::gemini::bench(c);
}

criterion_group!(benches, all);
criterion_main!(benches);
