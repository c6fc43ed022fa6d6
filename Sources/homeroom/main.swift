print("homeroom: building")
