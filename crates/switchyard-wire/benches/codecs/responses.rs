//! Benches of the responses codec (being written).

use criterion::Criterion;

pub fn bench(_c: &mut Criterion) {}
