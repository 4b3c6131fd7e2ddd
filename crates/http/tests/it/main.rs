//! The HTTP API's tests, one binary: the OpenAPI document as a client meets it on a real
//! server (`openapi`), and the handlers called in process through the router (`handlers`).
//! What needs a real server and its connections (signals, TLS, limits under load, the
//! command line's `onejob serve`) is tested in the command line's crate.

mod handlers;
mod openapi;
