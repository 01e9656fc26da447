//! Benches of the gemini codec (being written).

use criterion::Criterion;

pub fn bench(_c: &mut Criterion) {}
