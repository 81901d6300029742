package fencing
