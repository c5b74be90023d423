# Writes gulpdb(1) from the command's own help with help2man, then gzips it
# (as Debian installs man pages):
#
#   cmake -DGULPDB=<command> -DHELP2MAN=<help2man> -DOUTPUT=<file.1.gz> -P cmake/man_page.cmake
#
# help2man turns `gulpdb --help` and `gulpdb --version` into the synopsis and
# the command list; a COMMANDS section adds `gulpdb <name> --help` of every
# subcommand, and the sections below what the help does not say.

if(NOT GULPDB OR NOT HELP2MAN OR NOT OUTPUT)
  message(FATAL_ERROR
          "usage: cmake -DGULPDB=<command> -DHELP2MAN=<help2man> -DOUTPUT=<file> -P man_page.cmake")
endif()

function(gulpdb_run out)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man_page.cmake: '${ARGN}' failed (${rc}): ${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# roff: a backslash is written \e; a line starting with . or ' would be a
# request, \& in front makes it text.
function(gulpdb_roff_text out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

gulpdb_run(top ${GULPDB} --help)
string(REGEX MATCHALL "\n  [a-z][a-z0-9-]*  " command_lines "${top}")
set(commands_section "")
foreach(line IN LISTS command_lines)
  string(STRIP "${line}" command)
  gulpdb_run(help ${GULPDB} ${command} --help)
  gulpdb_roff_text(help "${help}")
  string(APPEND commands_section ".SS \"gulpdb ${command}\"\n.nf\n${help}.fi\n")
endforeach()
if(commands_section STREQUAL "")
  message(FATAL_ERROR "man_page.cmake: no commands found in '${GULPDB} --help'")
endif()

get_filename_component(out_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
get_filename_component(stem "${OUTPUT}" NAME_WLE)  # gulpdb.1
set(include_file "${out_dir}/${stem}.h2m")
file(WRITE "${include_file}" "[SYNOPSIS]
.B gulpdb
.I command
.RI [ options ]
.br
.B gulpdb
.I command
.B \\-\\-help
.br
.B gulpdb
.RB ( \\-\\-help | \\-\\-version )

[DESCRIPTION]
.B gulpdb
builds, inspects and checks gulpdb datasets: directories of GulpIO-format
.I .gulp
chunk files holding video frames as JPEG bytes, indexed by an LMDB B+tree
keyed by video id. Every subcommand has its own options, listed under
COMMANDS and by
.BR \"gulpdb \" command \" --help\" .

[COMMANDS]
${commands_section}
[EXIT STATUS]
.TP
.B 0
success (for
.BR check :
the dataset is healthy)
.TP
.B 1
an error, printed as one line
.RB \"gulpdb: \" \"<kind>: <what> <where>: <detail>\"
(for
.BR check :
a problem was found;
.BR remove :
an id was absent)
.TP
.B 2
a usage error: a bad command line
.TP
.B 130
.B ingest
was interrupted (Ctrl-C); what it had appended is committed

[ENVIRONMENT]
.TP
.B PATH
.B ingest
runs
.BR ffmpeg (1)
(or
.BR \\-\\-ffmpeg )
from the PATH to decode videos.
.TP
.B BROWSER
the program that
.B gulpdb view
starts with the page's address (default xdg\\-open; not with
.BR \\-\\-no\\-browser );
the address is printed either way.
.TP
.B AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL
the S3 endpoint of
.B s3://
URLs (the first one set; default AWS; a custom endpoint uses path-style addressing).
.TP
.B AWS_REGION, AWS_DEFAULT_REGION
the region that requests are signed for (default us-east-1).
.TP
.B AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
the credentials (both or neither); without them, a profile of the credentials file is used.
.TP
.B AWS_SESSION_TOKEN
the session token of temporary credentials given by the two above.
.TP
.B AWS_PROFILE, AWS_DEFAULT_PROFILE
the profile of the credentials file (default: default).
.TP
.B AWS_SHARED_CREDENTIALS_FILE
the credentials file (default ~/.aws/credentials).
.TP
.B AWS_CA_BUNDLE
a file of CA certificates for HTTPS to the endpoint.
.TP
.B GULPDB_S3_CONNECT_TIMEOUT_MS
milliseconds to connect to the store (default 5000).
.TP
.B GULPDB_S3_STALL_TIMEOUT_MS
milliseconds a transfer may make no progress (default 30000).
.TP
.B GULPDB_S3_REQUEST_TIMEOUT_MS
milliseconds a request may take with its retries (default 600000; 0: no deadline).
.TP
.B GULPDB_S3_MAX_ATTEMPTS
attempts per request before an error (default 5).
.TP
.B GULPDB_S3_RETRY_BUDGET_MS
milliseconds a request keeps retrying transient failures, even past the attempts, to ride out a server restart (default 10000; 0: the attempts alone).
.TP
.B GULPDB_S3_BACKOFF_BASE_MS, GULPDB_S3_BACKOFF_MAX_MS
the exponential backoff between attempts (default 100 and 5000).
.TP
.B GULPDB_S3_MAX_CONNECTIONS
connections kept open to the store (default 16).
.TP
.B GULPDB_S3_PART_SIZE, GULPDB_S3_MULTIPART_THRESHOLD
the part size of multipart uploads, and the object size from which
.B push
uses them (default 8 MiB each).
.TP
.B GULPDB_S3_ADDRESSING_STYLE
auto, path or virtual: how a bucket is addressed (default auto: virtual-hosted for AWS, path style elsewhere).
.TP
.B GULPDB_PUSH_GRACE
how long
.B push
and
.B snapshot
keep objects they make obsolete (default 24h; see
.BR \\-\\-grace ).
.TP
.B GULPDB_PUSH_LEASE
how long the lease a
.B push
holds on its prefix lasts without renewal (default 2m; renewed every quarter of it while the push runs; a push that died leaves it to expire).
.TP
.B GULPDB_CACHE, GULPDB_CACHE_DIR
the cache of index snapshots of remote datasets (GULPDB_CACHE_DIR is its older name; default $XDG_CACHE_HOME/gulpdb, else ~/.cache/gulpdb).
.TP
.B GULPDB_CACHE_BYTES
a bound on the bytes of the partitions of partitioned snapshots (what push publishes by default) in the cache, in bytes or with a K, M, G or T suffix (powers of 1024); the least recently used partitions that no open reader holds are deleted past it (default: no bound).
.TP
.B GULPDB_FRAME_CACHE_BYTES
the bound of the frame cache of remote datasets ($GULPDB_CACHE/frames: chunk bytes in verified blocks, shared by every process of the machine), in bytes or with a K, M, G or T suffix; 0 turns it off (default 10G).
.TP
.B GULPDB_FRAME_CACHE_BLOCK
the frame cache's block size, a power of two from 64K to 64M (default 1M).
.TP
.B GULPDB_PREFETCH_BYTES
the memory read-ahead (Dataset.prefetch) may hold when the frame cache is off (default 256M).
.TP
.B XDG_CACHE_HOME, HOME
where the default cache is (and HOME where ~/.aws/credentials is).
.TP
.B GULPDB_ALLOW_NETWORK_INDEX
1: open the live index of a dataset on a network file system read-only (safe only when no other host writes it).
.TP
.B GULPDB_TEST_FS_TYPE
for tests only: the file system type to report for a dataset's index directory.
.TP
.B GULPDB_TEST_BUG
for gulpdb's own tests only: puts back the fixed bug it names, so that the tests can show they find it; gulpdb then gives wrong answers.
.TP
.B GULPDB_TEST_BOOT_ID
for gulpdb's own tests only: the boot id the index journal compares to decide whether a power cut happened since its last writer (the power-loss simulator recovers as after a reboot with it); set elsewhere, recovery may trust index pages a power cut lost.
.TP
.B GULPDB_TEST_JOURNAL_BYTES
for gulpdb's own tests only: the size in bytes of a new index journal (default 4 MiB; it doubles when full, up to 32 MiB), so that the power-loss simulator fills and grows one with a few commits.
.TP
.B GULPDB_TEST_PARTITION_BYTES
for gulpdb's own tests only: the size in bytes at which a partitioned push cuts a partition (default 256 KiB), so that small test datasets have many partitions.
.TP
.B GULPDB_TEST_ROOT_PAGE_BYTES
for gulpdb's own tests only: the size in bytes of the pages of a two-level partition root (default 64 KiB; a group of partitions is listed by pages once its entries would take four), so that small test datasets have paged roots.
.TP
.B GULPDB_TEST_META_KEY_FORM
for gulpdb's own tests only: "canonical" makes a new meta index in the first key form (equality only, as gulpdb versions before ordered indexes made them), so that the tests read, keep and rebuild such indexes.

[SEE ALSO]
.BR ffmpeg (1).
The C++ library (gulpdb/dataset.h, CMake package gulpdb, pkg-config gulpdb)
and the Python package
.B gulpdb
read and write the same datasets.
")

gulpdb_run(ignored ${HELP2MAN} --no-info
           --name "build, inspect and check gulpdb video datasets"
           --section 1 --include "${include_file}" --output "${out_dir}/${stem}" ${GULPDB})
# gzip -n: no name or time stamp inside, so the same page gives the same file.
file(REMOVE "${OUTPUT}")
gulpdb_run(ignored gzip -9n "${out_dir}/${stem}")
if(NOT EXISTS "${OUTPUT}")
  message(FATAL_ERROR "man_page.cmake: gzip did not write ${OUTPUT}")
endif()
