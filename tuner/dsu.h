// Union-find (disjoint sets) over indices 0..n-1, with path halving: the cycle
// and connectivity checks of topologies and of discovered switch links.
//
// Thread-safety: a value; not shared.
#pragma once

#include <numeric>
#include <vector>

namespace topotune {

struct Dsu {
  std::vector<int> parent;
  explicit Dsu(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  // Joins the sets of a and b; false if they were already one set.
  bool Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return false;
    parent[a] = b;
    return true;
  }
};

}  // namespace topotune
