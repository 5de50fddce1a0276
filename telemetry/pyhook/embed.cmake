# Turns sitecustomize.py into a C++ header holding its text, so the hook travels inside the
# nodus binary (a fresh build and `cmake --install` both have it; nothing to find at run time).
# Usage: cmake -DIN=<py> -DOUT=<header> -P embed.cmake
file(READ "${IN}" text)
string(FIND "${text}" ")nodus_py\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )nodus_py\"")
endif()
file(WRITE "${OUT}.tmp" "#pragma once\n// Generated from telemetry/pyhook/sitecustomize.py; do not edit.\n#include <string_view>\nnamespace nodus::telemetry {\ninline constexpr std::string_view kPyhookSource = R\"nodus_py(${text})nodus_py\";\n}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
