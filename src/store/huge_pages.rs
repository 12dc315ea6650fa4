//! Large scanned buffers backed by 2 MiB pages where the kernel allows it.
//!
//! **Why.** The int8 copy of a million 384-dimension vectors is 384 MB: 98,304 pages of
//! 4 KiB, each needing an address translation (a page-table walk on a TLB miss) when a
//! scan reaches it. With 2 MiB pages the same bytes are 192 pages, and the dense scan at
//! a million rows went from 27.5 / 26.6 ms to 21.6 / 20.0 ms at p50 (two interleaved
//! rounds of `raglab bench retrieval --synthetic 1000000`).
//!
//! Linux often runs transparent huge pages in `madvise` mode: only ranges that ask get
//! them. Asking is a hint: where huge pages are off or memory is too fragmented, the
//! buffer keeps 4 KiB pages and nothing else changes.

/// `len` zero bytes, asked to be backed by huge pages. The buffer is asked before it is
/// first written, so its pages are huge from the first fault on.
pub fn zeroed(len: usize) -> Vec<i8> {
    let mut buf = vec![0i8; len];
    advise_huge(&mut buf);
    buf
}

/// The memory-bandwidth reference the scan's speed is judged against: the times in ms
/// of `rounds` copies of `len` bytes between two buffers on the same kind of pages as
/// the scan's copy, so a ratio of the two compares bandwidth with bandwidth, not page
/// sizes.
pub fn copy_times_ms(len: usize, rounds: usize) -> Vec<f64> {
    let mut src = zeroed(len);
    src.fill(1);
    let mut dst = zeroed(len);
    (0..rounds)
        .map(|_| {
            let t = std::time::Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

/// The size of a huge page on x86-64 and aarch64 (with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise_huge(buf: &mut [i8]) {
    let start = buf.as_mut_ptr() as usize;
    let first = start.next_multiple_of(HUGE_PAGE);
    let last = (start + buf.len()) / HUGE_PAGE * HUGE_PAGE;
    if last <= first {
        return;
    }
    // SAFETY: `[first, last)` is page aligned and lies inside `buf`, which is borrowed
    // mutably here, so no other reference sees the call. `MADV_HUGEPAGE` changes only
    // how the kernel backs the range (the size of its pages), never its contents or
    // whether it may be read or written; a failure (huge pages off) leaves it as it was,
    // which is why the result is ignored.
    let _ = unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_HUGEPAGE,
        )
    };
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_: &mut [i8]) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size around the huge-page boundaries (none, less than one page, one page
    /// misaligned, several) gives that many zero bytes that can be written and read.
    #[test]
    fn zeroed_buffers_hold_their_bytes_at_every_size() {
        for len in [
            0,
            1,
            HUGE_PAGE - 1,
            HUGE_PAGE,
            HUGE_PAGE + 1,
            5 * HUGE_PAGE + 7,
        ] {
            let mut buf = zeroed(len);
            assert_eq!(buf.len(), len);
            assert!(buf.iter().all(|&b| b == 0), "len {len}");
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (i % 251) as i8;
            }
            assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as i8));
        }
    }
}
