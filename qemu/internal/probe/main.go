// Command probe is the image qemu.ChooseAccel boots under KVM to learn
// whether KVM runs the yolk kernel: an ordinary Go program that prints one
// line and returns, so the kernel reports "yolk: exit 0". It must stay
// trivial; any other behaviour would make the probe test more than KVM.
package main

import "fmt"

func main() {
	fmt.Println("yolk: kvm probe: Go main reached")
}
