package setnx
