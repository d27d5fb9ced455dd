//! Stage 7, respond: the response and its text form ([`response`]), hits as the response
//! holds them (`hits`), the card of a measure ([`measure_card`]: MCP `show`, and the answer of
//! a search whose first entity is a measure), and the warnings collected along the way
//! (`warnings`).

pub(crate) mod bound;
pub(crate) mod hits;
pub mod measure_card;
pub mod response;
pub mod routing_explain;
pub(crate) mod supersession;
pub(crate) mod warnings;
