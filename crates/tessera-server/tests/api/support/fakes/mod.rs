//! Fakes of the real providers' wires, built from their own documentation (D18): the same paths,
//! auth headers, field names, status codes and answer shapes, with controls for the tests.
pub mod flutterwave;
pub mod hubtel;
