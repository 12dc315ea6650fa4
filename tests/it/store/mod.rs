//! Storage: crash and lock safety, object stores, record schemas, secrets.

mod data_safety;
mod object_store;
mod record_schemas;
mod secrets;
