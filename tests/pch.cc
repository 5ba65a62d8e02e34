// Precompiled-header carrier for the test executables (tests/CMakeLists.txt): intentionally empty.
