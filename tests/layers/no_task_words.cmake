# Fails when a library layer's code names a task: the library holds what a general framework holds,
# and task- or language-specific code lives beside the program that uses it (docs/design.md, "What
# each layer holds"). Run as
#   cmake -DROOT=<repository> -P tests/layers/no_task_words.cmake
# It reads every .hpp, .h, .cpp and .cmake file and CMakeLists.txt under ROOT's layer folders and
# reports each line that names, in any case, a negation ("negation", "negator"), contrast pairs,
# polarity or IMDb, as file:line: text. IMDb may be named by the dataset reader (datasets/imdb/, a
# reader like torchvision.datasets') and the datasets layer's umbrella header that lists it.
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "no_task_words.cmake: pass -DROOT=<repository root>")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
set(layers autograd io nn optim train models datasets distributed)
set(words "negation|negator|contrast[ _-]?pair|polarity")
set(found 0)
set(report "")
foreach(layer IN LISTS layers)
  if(NOT IS_DIRECTORY ${ROOT}/${layer})
    continue()
  endif()
  file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/${layer}/*.hpp ${ROOT}/${layer}/*.h ${ROOT}/${layer}/*.cpp
       ${ROOT}/${layer}/*.cmake ${ROOT}/${layer}/CMakeLists.txt)
  list(SORT files)
  foreach(file IN LISTS files)
    set(pattern "${words}|imdb")
    if(file MATCHES "^datasets/imdb/" OR file STREQUAL "datasets/datasets.hpp")
      set(pattern "${words}")
    endif()
    # Each line as it is (a ';' would split a CMake list): read the file and cut it at newlines.
    file(READ ${ROOT}/${file} text)
    string(REPLACE ";" "\\;" text "${text}")
    string(REPLACE "\n" ";" lines "${text}")
    set(number 0)
    foreach(line IN LISTS lines)
      math(EXPR number "${number} + 1")
      string(TOLOWER "${line}" lower)
      if(lower MATCHES "${pattern}")
        string(STRIP "${line}" shown)
        string(APPEND report "  ${file}:${number}: ${shown}\n")
        math(EXPR found "${found} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(found GREATER 0)
  message(FATAL_ERROR "${found} line(s) of the library layers name a task (its code belongs beside the program "
                      "that uses it, docs/design.md):\n${report}")
endif()
message(STATUS "the library layers name no task")
