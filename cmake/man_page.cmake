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
from the PATH to decode videos.

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
