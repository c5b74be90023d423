// The program of the link-level layering probes (tests/CMakeLists.txt,
// gulpdb_link_probe): every object of one room's library is linked into it,
// with only the libraries that room may use. It never runs: that it links is
// the test (an upward call would be an undefined reference).
int main() { return 0; }
