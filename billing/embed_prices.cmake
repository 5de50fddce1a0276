# Writes billing/prices.json into a header as a raw string literal, so the built-in catalog needs
# no file at run time. Run by the custom command in billing/CMakeLists.txt: cmake -DINPUT=...
# -DOUTPUT=... -P embed_prices.cmake
file(READ "${INPUT}" content)
string(FIND "${content}" ")nodus_prices\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter )nodus_prices\"")
endif()
file(WRITE "${OUTPUT}"
  "#pragma once\n"
  "// Generated from billing/prices.json by billing/embed_prices.cmake. Do not edit.\n"
  "namespace nodus::billing {\n"
  "inline constexpr char kBuiltinPricesJson[] = R\"nodus_prices(${content})nodus_prices\";\n"
  "}  // namespace nodus::billing\n")
