//! Cached objects kept in one slab and threaded onto doubly linked lists by index, as every
//! list-based policy needs: nodes live in a `Vec` and link by `u32` indexes (no pointer per
//! link, no allocation per access once the slab has grown), freed nodes are reused through a
//! free list threaded through their `next` links, and each [`List`] keeps the bytes on it so a
//! policy can size its queues (ARC's T1/B1, 2Q's Ain, S3-FIFO's small queue) in O(1).
//!
//! A list's front is its newest end; policies evict from the back.

/// No node: the end of a list, or an empty one.
pub const NIL: u32 = u32::MAX;

/// A cached object (or a ghost entry) and its links; `meta` is the policy's own state.
pub struct Node<M> {
    pub key: u64,
    pub size: u64,
    pub meta: M,
    prev: u32,
    next: u32,
}

/// One list's ends and the bytes and nodes on it.
#[derive(Debug, Clone, Copy)]
pub struct List {
    head: u32,
    tail: u32,
    pub bytes: u64,
    pub len: u32,
}

impl Default for List {
    fn default() -> Self {
        Self {
            head: NIL,
            tail: NIL,
            bytes: 0,
            len: 0,
        }
    }
}

impl List {
    /// The oldest node, if any.
    pub fn back(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

pub struct Slab<M> {
    nodes: Vec<Node<M>>,
    /// First free node (freed nodes chain through `next`).
    free: u32,
}

impl<M> Default for Slab<M> {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            free: NIL,
        }
    }
}

impl<M> Slab<M> {
    /// A node on no list, reusing a freed one if there is one.
    pub fn alloc(&mut self, key: u64, size: u64, meta: M) -> u32 {
        let node = Node {
            key,
            size,
            meta,
            prev: NIL,
            next: NIL,
        };
        if self.free == NIL {
            self.nodes.push(node);
            u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 cached objects")
        } else {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        }
    }

    /// Returns node `i` (already off its list) to the free list.
    pub fn release(&mut self, i: u32) {
        self.nodes[i as usize].next = self.free;
        self.free = i;
    }

    #[inline]
    pub fn get(&self, i: u32) -> &Node<M> {
        &self.nodes[i as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut Node<M> {
        &mut self.nodes[i as usize]
    }

    /// Puts node `i` (on no list) at the front of `list`.
    #[inline]
    pub fn push_front(&mut self, list: &mut List, i: u32) {
        let head = list.head;
        let node = &mut self.nodes[i as usize];
        node.prev = NIL;
        node.next = head;
        list.bytes += node.size;
        list.len += 1;
        if head == NIL {
            list.tail = i;
        } else {
            self.nodes[head as usize].prev = i;
        }
        list.head = i;
    }

    /// Takes node `i` off `list` (it must be on it).
    #[inline]
    pub fn unlink(&mut self, list: &mut List, i: u32) {
        let Node { prev, next, size, .. } = self.nodes[i as usize];
        if prev == NIL {
            list.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            list.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        list.bytes -= size;
        list.len -= 1;
    }

    /// Moves node `i` of `list` to its front.
    #[inline]
    pub fn move_to_front(&mut self, list: &mut List, i: u32) {
        if list.head != i {
            self.unlink(list, i);
            self.push_front(list, i);
        }
    }

    /// The keys on `list`, newest first.
    #[cfg(test)]
    pub fn keys(&self, list: &List) -> Vec<u64> {
        let mut out = Vec::new();
        let mut i = list.head;
        while i != NIL {
            out.push(self.get(i).key);
            i = self.get(i).next;
        }
        out
    }

    /// Takes the oldest node off `list` and returns it (still allocated).
    #[inline]
    pub fn pop_back(&mut self, list: &mut List) -> Option<u32> {
        let i = list.back()?;
        self.unlink(list, i);
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_link_count_and_reuse_nodes() {
        let mut slab: Slab<()> = Slab::default();
        let mut list = List::default();
        let a = slab.alloc(1, 10, ());
        let b = slab.alloc(2, 20, ());
        let c = slab.alloc(3, 30, ());
        for i in [a, b, c] {
            slab.push_front(&mut list, i);
        }
        assert_eq!(slab.keys(&list), [3, 2, 1]);
        assert_eq!((list.bytes, list.len), (60, 3));
        slab.move_to_front(&mut list, a);
        assert_eq!(slab.keys(&list), [1, 3, 2]);
        slab.unlink(&mut list, c); // from the middle
        assert_eq!(slab.keys(&list), [1, 2]);
        assert_eq!(slab.pop_back(&mut list), Some(b));
        assert_eq!((list.bytes, list.len), (10, 1));
        slab.release(b);
        slab.release(c);
        // freed nodes come back last-freed first, before the slab grows
        assert_eq!(slab.alloc(7, 1, ()), c);
        assert_eq!(slab.alloc(8, 1, ()), b);
        assert_eq!(slab.alloc(9, 1, ()), 3);
        assert_eq!(slab.pop_back(&mut list), Some(a));
        assert!(list.is_empty() && slab.pop_back(&mut list).is_none());
    }
}
