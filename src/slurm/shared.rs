//! An immutable string shared between the records that repeat it: user,
//! account, partition, QoS and working directory recur across thousands of
//! squeue rows, and one allocation serves them all.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Reads as a `str`; cloning shares the text.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl From<&str> for SharedStr {
    fn from(s: &str) -> Self {
        SharedStr(Arc::from(s))
    }
}

impl From<&String> for SharedStr {
    fn from(s: &String) -> Self {
        SharedStr(Arc::from(s.as_str()))
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> Self {
        SharedStr(Arc::from(s))
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl serde::Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Hands out one `SharedStr` per distinct text, for the life of one parse (which may
/// outlive the text it reads: a streamed answer is let go record by record).
#[derive(Debug, Default)]
pub(crate) struct Interner {
    seen: HashSet<SharedStr>,
}

impl Interner {
    pub(crate) fn get(&mut self, s: &str) -> SharedStr {
        if let Some(x) = self.seen.get(s) {
            return x.clone();
        }
        let x = SharedStr::from(s);
        self.seen.insert(x.clone());
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_allocation() {
        let mut i = Interner::default();
        let (a, b) = (i.get("sduser"), i.get("sduser"));
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "sduser");
        assert_eq!(format!("{a:?} {a}"), "\"sduser\" sduser");
        assert_ne!(i.get("other"), a);
    }
}
