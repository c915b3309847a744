// What the op drivers (yolov8_nms.cpp, yolov5_nms.cpp, yolox_nms.cpp, yolov8_bbox_only.cpp,
// yolov5_bbox_only.cpp) read and write on their pipes: one head of a request, one answer.
#ifndef HARNESS_ORACLE_DRIVER_IO_HPP
#define HARNESS_ORACLE_DRIVER_IO_HPP

#include "net_flow/ops_metadata/op_metadata.hpp"

#include <cstdint>
#include <iostream>
#include <vector>

// One head: "H W C PH PW PC ZP SCALE MIN MAX NBYTES\n" + NBYTES bytes (the device frame, NHCW) into ``frame``.
static hailort::net_flow::BufferMetaData read_head(hailo_format_type_t type, std::vector<uint8_t> &frame)
{
    hailort::net_flow::BufferMetaData meta{};
    size_t nbytes;
    std::cin >> meta.shape.height >> meta.shape.width >> meta.shape.features
             >> meta.padded_shape.height >> meta.padded_shape.width >> meta.padded_shape.features
             >> meta.quant_info.qp_zp >> meta.quant_info.qp_scale >> meta.quant_info.limvals_min >> meta.quant_info.limvals_max
             >> nbytes;
    std::cin.get();
    frame.resize(nbytes);
    std::cin.read(reinterpret_cast<char *>(frame.data()), static_cast<std::streamsize>(nbytes));
    meta.format = hailo_format_t{type, HAILO_FORMAT_ORDER_NHCW, HAILO_FORMAT_FLAGS_NONE};
    return meta;
}

// The answer: "STATUS NBYTES\n" + the bytes (none unless STATUS is HAILO_SUCCESS).
static void write_answer(hailo_status status, const std::vector<uint8_t> &bytes)
{
    const size_t size = (HAILO_SUCCESS == status) ? bytes.size() : 0;
    std::cout << static_cast<int>(status) << " " << size << "\n";
    std::cout.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(size));
    std::cout.flush();
}

#endif
