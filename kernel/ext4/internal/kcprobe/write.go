package main

// probeWrite calls the write side.
func probeWrite(ino uint32) {}
