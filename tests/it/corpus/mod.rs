//! Ingesting and reading the corpus: the sample, bad files, fuzzed readers.

mod fuzz_readers;
mod ingest_bad_files;
mod ingest_sample;
mod sample_data;
