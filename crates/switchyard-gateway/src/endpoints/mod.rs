//! The HTTP endpoints: what each path and method is, before any model call. A model
//! call's endpoint names the call ([`calls`], [`gemini`]) and [`crate::call`] serves it;
//! the rest answer themselves (the model lists, the stored responses ([`responses`]),
//! health and metrics, the console, and the fallback for a path or method the gateway
//! does not serve).

pub(crate) mod calls;
pub(crate) mod console;
pub(crate) mod gemini;
pub(crate) mod health;
pub(crate) mod models;
pub(crate) mod not_found;
pub(crate) mod responses;
