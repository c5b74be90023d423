// GULPDB_EXPORT marks the public API of libgulpdb.
//
// The library is compiled with hidden symbol visibility, so a shared
// libgulpdb.so exports only the classes and functions marked here (and the
// standard-library template code they instantiate): its internals cannot be
// linked against, and it can change them without breaking its users. For a
// static libgulpdb, and for code that uses the library, the mark changes
// nothing. GCC and Clang (the compilers the build supports) spell it the same
// way for the library and its users.
#ifndef GULPDB_EXPORT_H_
#define GULPDB_EXPORT_H_

#define GULPDB_EXPORT __attribute__((visibility("default")))

// GULPDB_NO_EXPORT keeps a member class of an exported class (its private
// implementation) out of libgulpdb.so's exports: members inherit the
// visibility of their class otherwise.
#define GULPDB_NO_EXPORT __attribute__((visibility("hidden")))

#endif  // GULPDB_EXPORT_H_
