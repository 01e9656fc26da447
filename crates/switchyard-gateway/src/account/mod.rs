//! Who is calling and what they may spend: client keys, their rate limits and calls in
//! flight, their budgets, and a stream stopped at its budget reservation.

pub(crate) mod budget_stop;
pub(crate) mod budgets;
pub mod keys;
pub mod limits;
