#!/bin/bash
source ./greet.sh

greet alice
farewell bob
