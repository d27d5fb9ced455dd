//! Stage 7, respond: the response and its text form ([`response`]), hits as the response
//! holds them (`hits`), and the warnings collected along the way (`warnings`).

pub(crate) mod hits;
pub mod response;
pub(crate) mod warnings;
