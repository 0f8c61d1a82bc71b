// Builds the precompiled header every GoogleTest suite reuses
// (tests/CMakeLists.txt); the executable itself is never run.
int main() { return 0; }
