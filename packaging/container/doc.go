// Package container holds boincd's container image definition (Dockerfile,
// Dockerfile.dockerignore) and the tests that check it. It has no code of its
// own: the tests parse the Dockerfile and assert the properties the image
// promises (non-root numeric USER, exec-form ENTRYPOINT, SIGTERM stop signal,
// a cgo build, no credentials copied in) and, when asked with
// BOINCD_TEST_DOCKER=1 on a machine with docker, build and run the image.
package container
