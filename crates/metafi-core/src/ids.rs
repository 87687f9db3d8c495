//! Random ids the server makes on hot paths (session ids, new users, trace ids).

use uuid::Uuid;

/// A random (version 4) UUID from the thread's generator (a CSPRNG seeded from the OS), with
/// no system call: `Uuid::new_v4` asks the kernel (`getrandom`) for every one, which was one
/// of the six system calls of a device sign-in.
pub fn random_uuid() -> Uuid {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid()
}
