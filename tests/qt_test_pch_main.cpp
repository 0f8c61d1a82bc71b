// Carries the precompiled Qt headers every widget suite reuses
// (tests/CMakeLists.txt, mlk_qt_test_pch); it runs nothing.
int main() { return 0; }
