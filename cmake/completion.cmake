# Writes the bash completion of the gulpdb command from its own help, so that
# it never falls behind the options:
#
#   cmake -DGULPDB=<command> -DOUTPUT=<file> -P cmake/completion.cmake
#
# `gulpdb --help` lists the subcommands ("  <name>  <summary>" lines after
# "commands:"); `gulpdb <name> --help` lists each one's options in
# Boost.Program_options' layout:
#
#   --dir arg                  dataset directory
#   -o [ --output ] arg        output directory (created if missing)
#   --on-duplicate arg (=skip) an id already in the dataset: error, skip or
#                              replace
#
# An option followed by "arg" takes a value. The value completes as one of
# the words its description ends with ("...: a, b or c"), as a file name when
# the option names a directory, a list, labels or an output, and not at all
# otherwise (numbers). Words that are not options complete as directories:
# every subcommand starts with a dataset directory.

if(NOT GULPDB OR NOT OUTPUT)
  message(FATAL_ERROR "usage: cmake -DGULPDB=<command> -DOUTPUT=<file> -P completion.cmake")
endif()

# Runs the command with the given arguments; its output, as a list of lines.
# (Semicolons, which would split list items, and square brackets, inside
# which CMake does not split a list, become placeholders.)
function(gulpdb_help_lines out)
  execute_process(COMMAND ${GULPDB} ${ARGN} OUTPUT_VARIABLE text ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "completion.cmake: '${GULPDB} ${ARGN}' failed (${rc}): ${err}")
  endif()
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REPLACE "[" "<lbracket>" text "${text}")
  string(REPLACE "]" "<rbracket>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

gulpdb_help_lines(top_lines --help)
set(commands)
set(in_commands FALSE)
foreach(line IN LISTS top_lines)
  if(line STREQUAL "commands:")
    set(in_commands TRUE)
  elseif(in_commands AND line MATCHES "^  ([a-z][a-z0-9-]*)  ")
    list(APPEND commands ${CMAKE_MATCH_1})
  elseif(in_commands AND line STREQUAL "")
    set(in_commands FALSE)
  endif()
endforeach()
if(NOT commands)
  message(FATAL_ERROR "completion.cmake: no commands found in '${GULPDB} --help'")
endif()

# One `case` branch per subcommand: its options, those that take a value,
# and the value completions.
set(branches "")
foreach(command IN LISTS commands)
  gulpdb_help_lines(lines ${command} --help)
  # Joins each option's description lines, then parses the option line.
  set(entries)
  set(entry "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^  -")
      if(entry)
        list(APPEND entries "${entry}")
      endif()
      set(entry "${line}")
    elseif(entry AND line MATCHES "^      +([^ ].*)$")
      string(APPEND entry " ${CMAKE_MATCH_1}")
    elseif(entry)
      list(APPEND entries "${entry}")
      set(entry "")
    endif()
  endforeach()
  if(entry)
    list(APPEND entries "${entry}")
  endif()

  set(options)
  set(value_cases "")
  set(value_options)
  foreach(entry IN LISTS entries)
    if(NOT entry MATCHES "^  (-([a-zA-Z0-9]) <lbracket> )?--([a-z0-9][a-z0-9-]*)( <rbracket>)?( arg)?(.*)$")
      message(FATAL_ERROR "completion.cmake: cannot read option line '${entry}' of ${command}")
    endif()
    set(short ${CMAKE_MATCH_2})
    set(long --${CMAKE_MATCH_3})
    set(takes_value "${CMAKE_MATCH_5}")
    string(REGEX REPLACE "  +" " " description "${CMAKE_MATCH_6}")
    string(STRIP "${description}" description)
    set(names ${long})
    if(short)
      list(APPEND names -${short})
    endif()
    list(APPEND options ${names})
    if(NOT takes_value)
      continue()
    endif()
    list(APPEND value_options ${names})
    string(REPLACE ";" "|" pattern "${names}")
    if(description MATCHES ": ([a-z][a-z-]*(, [a-z][a-z-]*)* or [a-z][a-z-]*)$")
      string(REGEX REPLACE ",? or |, " " " choices "${CMAKE_MATCH_1}")
      string(APPEND value_cases
             "        ${pattern}) COMPREPLY=($(compgen -W '${choices}' -- \"$cur\")) ;;\n")
    elseif(long MATCHES "(dir|list|labels|output|out|shards)$")
      string(APPEND value_cases
             "        ${pattern}) compopt -o filenames; COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n")
    else()
      string(APPEND value_cases "        ${pattern}) COMPREPLY=() ;;\n")
    endif()
  endforeach()
  list(JOIN options " " options)
  string(APPEND branches "    ${command})\n"
                         "      options='${options}'\n"
                         "      case $prev in\n"
                         "${value_cases}"
                         "        *) value=0 ;;\n"
                         "      esac\n"
                         "      ;;\n")
endforeach()
list(JOIN commands " " command_words)

get_filename_component(command_name "${GULPDB}" NAME)
execute_process(COMMAND ${GULPDB} --version OUTPUT_VARIABLE version
                OUTPUT_STRIP_TRAILING_WHITESPACE)
file(WRITE "${OUTPUT}" "# bash completion for ${version}: its subcommands and their options.
# Generated from the command's --help when it is built (cmake/completion.cmake).

_gulpdb() {
  local cur=\${COMP_WORDS[COMP_CWORD]}
  local prev=\${COMP_WORDS[COMP_CWORD-1]}
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W '${command_words} --help --version' -- \"$cur\"))
    return
  fi
  # value=1 while completing an option's value (each branch clears it for the
  # options that take none)
  local options='' value=1
  case \${COMP_WORDS[1]} in
${branches}    *) return ;;
  esac
  ((value)) && return
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))
  else
    compopt -o filenames
    COMPREPLY=($(compgen -d -- \"$cur\"))
  fi
}
complete -F _gulpdb gulpdb
")
