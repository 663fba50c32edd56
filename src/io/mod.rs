//! Talking to a cluster: each function makes one remote round trip (or sets up the
//! transport for one) and returns plain data. Shared by the dashboard's workers and the
//! command line; nothing here knows about tasks, messages or the UI.

pub mod connect;
