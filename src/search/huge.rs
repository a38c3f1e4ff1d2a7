//! Buffers for the randomly accessed arrays of a graph search, backed by transparent huge pages
//! where the system offers them.
//!
//! An HNSW walk reads a few hundred rows scattered over tens of megabytes (60000 codes of 1 KiB
//! at k = 1024), so nearly every row costs a TLB miss with 4 KiB pages — and inside a virtual
//! machine each miss walks two sets of page tables. On Linux these buffers are anonymous
//! mappings marked `MADV_HUGEPAGE`, so the kernel may back them with 2 MiB pages (with
//! `transparent_hugepage` set to `madvise` or `always`); elsewhere, or when the mapping fails,
//! they are ordinary vectors. The contents are the same either way: this only changes speed.

use std::fmt;
use std::ops::{Deref, DerefMut};

use bytemuck::Pod;

/// Below this size a plain vector is used (huge pages are 2 MiB).
const MIN_MAPPED_BYTES: usize = 4 << 20;

/// A fixed-length, zero-initialised slice of `T`, on huge pages where possible.
pub(crate) struct HugeBuf<T: Pod> {
    inner: Inner<T>,
}

enum Inner<T> {
    Vec(Vec<T>),
    #[cfg(target_os = "linux")]
    Map(memmap2::MmapMut, usize),
}

impl<T: Pod> HugeBuf<T> {
    /// `len` zeros.
    pub(crate) fn zeroed(len: usize) -> HugeBuf<T> {
        #[cfg(target_os = "linux")]
        {
            let bytes = len.saturating_mul(std::mem::size_of::<T>());
            if bytes >= MIN_MAPPED_BYTES && std::mem::align_of::<T>() <= 4096 {
                // An anonymous mapping is page-aligned and zero-filled by the kernel.
                if let Ok(map) = memmap2::MmapMut::map_anon(bytes) {
                    // Only a hint: a kernel without transparent huge pages keeps 4 KiB pages.
                    let _ = map.advise(memmap2::Advice::HugePage);
                    return HugeBuf {
                        inner: Inner::Map(map, len),
                    };
                }
            }
        }
        HugeBuf {
            inner: Inner::Vec(vec![T::zeroed(); len]),
        }
    }

    /// A copy of `v`.
    pub(crate) fn from_slice(v: &[T]) -> HugeBuf<T> {
        let mut b = HugeBuf::zeroed(v.len());
        b.copy_from_slice(v);
        b
    }
}

impl<T: Pod> Deref for HugeBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.inner {
            Inner::Vec(v) => v,
            #[cfg(target_os = "linux")]
            Inner::Map(m, len) => &bytemuck::cast_slice(&m[..])[..*len],
        }
    }
}

impl<T: Pod> DerefMut for HugeBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.inner {
            Inner::Vec(v) => v,
            #[cfg(target_os = "linux")]
            Inner::Map(m, len) => &mut bytemuck::cast_slice_mut(&mut m[..])[..*len],
        }
    }
}

impl<T: Pod> Clone for HugeBuf<T> {
    fn clone(&self) -> Self {
        HugeBuf::from_slice(self)
    }
}

impl<T: Pod + PartialEq> PartialEq for HugeBuf<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for HugeBuf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_mapped_buffers_hold_what_is_written() {
        for len in [0usize, 1, 1000, (MIN_MAPPED_BYTES / 4) + 3] {
            let mut b = HugeBuf::<u32>::zeroed(len);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
            for (i, x) in b.iter_mut().enumerate() {
                *x = i as u32 * 7;
            }
            let c = b.clone();
            assert_eq!(c, b);
            assert!(c.iter().enumerate().all(|(i, &x)| x == i as u32 * 7));
            let v: Vec<i8> = (0..len).map(|i| (i % 251) as i8).collect();
            assert_eq!(&*HugeBuf::from_slice(&v), &v[..]);
        }
    }
}
